/**
 * credential-harvest and exfiltration: reading the places secrets live (credential files, keys,
 * keychains, browser profiles, environment dumps) and sending local data off the machine (uploads,
 * request catchers and tunnels, raw IPs, raw sockets, DNS names built from data, image URLs, and
 * telling the model to send the conversation somewhere).
 */
import {
  byDestination,
  byUse,
  code,
  G,
  notTable,
  P,
  type Pattern,
  prose,
  publicIp,
  sourceLine,
  unlessDiscussed,
} from "./scan-match.js";

export const CREDENTIAL_HARVEST: Pattern[] = [
  {
    rule: "credential-harvest",
    severity: "high",
    view: "code",
    re: code(
      String.raw`\.aws[\\/]+(?:credentials|sso[\\/]+cache|cli[\\/]+cache)\b|\baws\s+configure\s+(?:export-credentials|get\s+aws_secret_access_key)|\.config[\\/]+gcloud\b|\bapplication_default_credentials\.json\b|\.azure[\\/]+(?:accesstokens\.json|msal_token_cache|azureprofile\.json|\b)|\.docker[\\/]+config\.json\b|\.git-credentials\b|\bgit\s+credential\s+fill\b|\.config[\\/]+gh[\\/]+hosts\.yml\b|\.terraform\.d[\\/]+credentials|\.vault-token\b|\.pgpass\b|\.s3cfg\b`,
    ),
    message: "reads a cloud or tool credential file",
    judge: byUse("high", "medium"),
  },
  {
    rule: "credential-harvest",
    severity: "medium",
    view: "code",
    re: code(
      String.raw`\.aws[\\/]+config\b|\.kube[\\/]+config\b|(?<![\w.])\.npmrc\b|(?<![\w.])\.pypirc\b|\.my\.cnf\b`,
    ),
    message: "touches a configuration file that may hold a token",
    judge: byUse("medium", "low"),
  },
  {
    rule: "credential-harvest",
    severity: "medium",
    view: "code",
    re: code(
      String.raw`\bgh\s+auth\s+token\b|\bgcloud\s+auth\s+print-access-token\b|\baz\s+account\s+get-access-token\b`,
    ),
    message: "prints an access token",
  },
  {
    rule: "credential-harvest",
    severity: "high",
    view: "code",
    re: code(
      String.raw`\bid_(?:rsa|dsa|ecdsa|ed25519)(?:_sk)?\b(?!\.pub)|\bauthorized_keys\b|\.ssh[\\/]+(?:\*|id_[\w-]*\b(?!\.pub)|identity\b(?!\.pub))`,
    ),
    message: "reads SSH private keys or authorized_keys",
    judge: byUse("high", "medium"),
  },
  {
    rule: "credential-harvest",
    severity: "medium",
    view: "code",
    re: code(
      String.raw`(?<![\w.])(?:~|\$home|\$\{home\}|%userprofile%|\/root|\/home\/[\w.$-]+)?[\\/]?\.ssh\b(?![\\/]+(?:config|known_hosts|[\w.-]+\.pub)\b)`,
    ),
    message: "mentions the SSH key folder",
    judge: byUse("high", "medium"),
  },
  {
    rule: "credential-harvest",
    severity: "high",
    view: "code",
    re: code(String.raw`(?<![\w.-])_?\.?netrc\b(?![\w-])`),
    message: "reads .netrc (saved logins)",
    judge: (m, ctx) => (m[0].includes(".") || m[0].startsWith("_") ? byUse("high", "medium")(m, ctx) : null),
  },
  {
    rule: "credential-harvest",
    severity: "medium",
    view: "code",
    re: code(
      String.raw`(?<![\w.$>\])-])\.env(?:\.(?:local|production|prod|development|dev|staging|test|secrets?))?(?![\w/\\-]|\.(?:example|sample|template|dist|defaults?|schema|tpl)\b)`,
    ),
    message: "reads a .env secrets file",
    judge: (m, ctx) => {
      const line = sourceLine(ctx, m.index);
      if (
        /\.env\.(?:example|sample|template|dist)|gitignore|dockerignore|never|don't|do not|not commit|commit/i.test(
          line,
        )
      )
        return null;
      return /\b(?:cat|type|head|tail|less|more|source|base64|xxd|grep|awk|sed|cp|scp|tar|zip|curl|wget|upload|send|file_read|read|open|print|dump|collect|copy|exfil\w*|post)\b/i.test(
        line,
      )
        ? "high"
        : "medium";
    },
  },
  {
    rule: "credential-harvest",
    severity: "high",
    view: "code",
    re: code(
      String.raw`\bsecurity\s+(?:find-generic-password|find-internet-password|dump-keychain|export\s+-k|unlock-keychain)\b|\blogin\.keychain(?:-db)?\b|[\\/]keychains[\\/]|\bsecret-tool\s+(?:lookup|search)\b|\bkwallet-query\b|\bcmdkey\s+\/list\b|\bvaultcmd\b|\bmimikatz\b|\bsekurlsa\b|\blsass(?:\.exe|\.dmp)?\b|\bget-storedcredential\b|\bcredread\b`,
    ),
    message: "reads the system keychain or credential manager",
  },
  {
    rule: "credential-harvest",
    severity: "high",
    view: "code",
    re: code(
      String.raw`\b(?:login data|web data|logins\.json|key[34]\.db|cookies\.sqlite|cookies\.binarycookies|formhistory\.sqlite)\b|\.mozilla[\\/]+firefox\b|(?:google[\\/ ]chrome|google-chrome|chromium|brave-browser|microsoft[\\/ ]edge|vivaldi|opera stable)[\\/]+(?:user data|default|profile \d+|cookies|local state|local storage)\b|firefox[\\/]+profiles\b|application support[\\/]+(?:google[\\/]+chrome|bravesoftware|microsoft edge|firefox)|appdata[\\/]+(?:local|roaming)[\\/]+(?:google[\\/]+chrome|mozilla|microsoft[\\/]+edge|bravesoftware|opera software|discord)|local storage[\\/]+leveldb|\b(?:browser_cookie3|browsercookie|pycookiecheat|chrome_cookies)\b`,
    ),
    message: "reads browser profiles, cookies or saved logins",
    judge: byUse("high", "medium"),
  },
  {
    rule: "credential-harvest",
    severity: "high",
    view: "code",
    re: code(
      String.raw`\/etc\/(?:shadow|gshadow|master\.passwd)\b|\\config\\sam\b|\breg(?:\.exe)?\s+(?:save|export)\s+hklm\\(?:sam|security|system)\b|\bwallet\.dat\b|\.electrum[\\/]|\bnkbihfbeogaeaoehlefnkodbefgpgknn\b|\.ethereum[\\/]+keystore|solana[\\/]+id\.json|\.bitcoin[\\/]`,
    ),
    message: "reads password hashes or wallet keys",
    judge: byUse("high", "medium"),
  },
  {
    rule: "credential-harvest",
    severity: "high",
    view: "code",
    re: code(
      String.raw`\bgpg2?\s+(?:[^\n]{0,300}\s)?--export-secret-(?:keys|subkeys)\b|\/var\/run\/secrets\/kubernetes\.io\/serviceaccount\b|\.gnupg[\\/]+(?:private-keys|secring)`,
    ),
    message: "exports private keys or a service-account token",
  },
  {
    rule: "credential-harvest",
    severity: "medium",
    view: "code",
    re: code(
      String.raw`\bpass\s+show\b|\bop\s+(?:item\s+get|read)\b|\bbw\s+get\s+(?:password|item)\b|\blpass\s+show\b|\bkeyring\.get_password\b`,
    ),
    message: "reads a password from a password manager",
  },
  {
    rule: "credential-harvest",
    severity: "high",
    view: "code",
    re: code(String.raw`\/proc\/(?:self|\d+|\*|\$\{?\w+\}?|\[0-9\]\*?|[a-z]+)\/environ\b`),
    message: "reads process environments (/proc/*/environ)",
  },
  {
    rule: "credential-harvest",
    severity: "high",
    view: "code",
    re: code(String.raw`\bprintenv\b(?!\s+[A-Za-z_]\w*\b)`),
    message: "dumps every environment variable",
  },
  {
    rule: "credential-harvest",
    severity: "medium",
    view: "code",
    re: code(
      String.raw`\bprintenv\s+[A-Za-z_]\w*\b|\benv\s*\|\s*grep\b|\bexport\s+-p\b|\bdeclare\s+-[px]{1,2}\b|\bcompgen\s+-[ev]\b`,
    ),
    message: "prints environment variables",
  },
  {
    rule: "credential-harvest",
    severity: "medium",
    view: "code",
    // "set" alone dumps every variable in a shell; in a list of subcommands it is only a word.
    re: code(String.raw`^\s*(?:\$\s+)?set\s*$`),
    message: "may dump every shell variable (set)",
  },
  {
    rule: "credential-harvest",
    severity: "high",
    view: "code",
    re: code(
      String.raw`(?:^|[;&|(\`]|\$\()\s*(?:sudo\s+)?env\s*(?:\|(?!\s*grep\b)|>{1,2}|$)|^\s*(?:\$\s+)?env\s*$|^\s*(?:\$\s+)?set\s*(?:\||>)|\b(?:get-childitem|gci|dir|ls)\s+env:|\[(?:system\.)?environment\]::getenvironmentvariables|\$\(\s*(?:env|printenv|set|export\s+-p)\s*\)`,
    ),
    message: "dumps every environment variable",
    judge: notTable(),
  },
  {
    rule: "credential-harvest",
    severity: "high",
    view: "code",
    re: code(
      String.raw`\b(?:json\.stringify|console\.(?:log|dir|table)|util\.inspect|send|post|write|writefile(?:sync)?|fetch|print|pprint|json\.dumps|str|repr|requests\.post|yaml\.dump)\s*\(\s*(?:\{\s*\.\.\.\s*)?(?:process\.env|os\.environ|dict\(os\.environ\)|env::vars\(\))\s*\}?\s*[,)]|\bENV\.(?:to_h|to_a|inspect)\b`,
    ),
    message: "dumps the process environment",
  },
  {
    rule: "credential-harvest",
    severity: "medium",
    view: "code",
    re: code(
      String.raw`\bobject\.(?:keys|entries|values)\(\s*process\.env\s*\)|\bos\.environ\.(?:items|keys|values)\(\)|\bfor\s*\(\s*(?:const|let|var)\s+\w+\s+in\s+process\.env\b`,
    ),
    message: "walks every environment variable",
  },
  {
    rule: "credential-harvest",
    severity: "high",
    view: "code",
    re: code(
      String.raw`\b(?:find|grep|rg|ag|locate|fd)\b[^\n]{0,120}?(?:\s~\/?|\$home|\/home\b|\/root\b|\/users\b|c:\\users|\s\/(?=\s|$))[^\n]{0,120}?(?:\.pem\b|\.key\b|id_rsa|\.p12\b|\.pfx\b|\.kdbx\b|wallet|password|passwd|secret|token|api[_-]?key|credential|\.env\b)`,
    ),
    message: "searches the home or root folder for keys and secrets",
  },
  {
    rule: "credential-harvest",
    severity: "high",
    view: "code",
    re: code(
      String.raw`169\.254\.169\.254|\bmetadata\.google\.internal\b|100\.100\.100\.200|\bfd00:ec2::254\b`,
    ),
    message: "queries the cloud instance metadata service (instance credentials)",
    judge: (m, ctx) =>
      /(?:\/\/(?:[^\s/@]{0,300}@)?|\b(?:curl|wget|fetch|web_fetch|invoke-webrequest|invoke-restmethod|iwr|irm|requests\.get)\b[^\n]{0,80}?)(?:169\.254\.169\.254|metadata\.google\.internal|100\.100\.100\.200)/i.test(
        sourceLine(ctx, m.index),
      )
        ? "high"
        : "medium",
  },
  {
    rule: "credential-harvest",
    severity: "medium",
    view: "code",
    re: code(
      String.raw`\.(?:bash|zsh|sh|fish|python|node_repl|mysql|psql)_history\b|\bconsolehost_history\.txt\b|\becho\s+["']?\$\{?\w*(?:token|secret|password|passwd|api_?key|private_?key)\w*\}?`,
    ),
    message: "reads shell history or prints a secret variable",
  },
];

export const EXFILTRATION: Pattern[] = [
  {
    rule: "exfiltration",
    severity: "high",
    view: "code",
    re: code(
      String.raw`\bcurl\b[^\n]{0,300}?(?:\s(?:-d|--data|--data-binary|--data-urlencode|--data-ascii|--json)(?:\s+|=)?["']?(?:[\w-]*=)?@|\s-[a-z]*F\s*["']?[\w.\[\]-]+=@|\s--form(?:-string)?(?:\s+|=)["']?[\w.\[\]-]+=@|\s(?:-T|--upload-file)\s*\S)`,
    ),
    message: "uploads a local file with curl",
    judge: byDestination,
  },
  {
    rule: "exfiltration",
    severity: "high",
    view: "code",
    re: code(
      String.raw`\bwget\b[^\n]{0,300}?--(?:post-file|body-file)\b|\bwget\b[^\n]{0,300}?--post-data[=\s]+["']?[^\s"']{0,300}(?:\$\(|\`)`,
    ),
    message: "uploads a local file with wget",
    judge: byDestination,
  },
  {
    rule: "exfiltration",
    severity: "high",
    view: "code",
    re: code(
      String.raw`\binvoke-(?:webrequest|restmethod)\b[^\n]{0,300}?-infile\b|\binvoke-(?:webrequest|restmethod)\b[^\n]{0,300}?-body\s*\(?\s*(?:get-content|gc|cat|\[(?:system\.)?io\.file\]::read)|\.upload(?:file|string|data)(?:async)?\s*\(|\brequests\.(?:post|put)\([^\n]{0,300}(?:files\s*=|data\s*=\s*open\()|\bfetch\([^\n]{0,300}body\s*:\s*(?:await\s+)?(?:fs\.)?(?:readfilesync|createreadstream|readfile)\b`,
    ),
    message: "uploads a local file",
    judge: byDestination,
  },
  {
    rule: "exfiltration",
    severity: "high",
    view: "code",
    re: code(
      String.raw`\b(?:[\w-]{1,63}\.){0,8}(?:webhook\.site|requestbin\.(?:com|net|io)|pipedream\.(?:net|com)|ngrok(?:-free)?\.(?:io|app|dev)|pastebin\.com|paste\.ee|hastebin\.com|ghostbin\.\w+|transfer\.sh|file\.io|0x0\.st|termbin\.com|ix\.io|sprunge\.us|interact\.sh|oast\.(?:fun|pro|live|site|online|me)|oastify\.com|burpcollaborator\.net|canarytokens\.(?:com|org)|requestcatcher\.com|hookbin\.com|beeceptor\.com|mockbin\.(?:org|io)|postb\.in|ptsv[23]\.com|webhook\.cool|trycloudflare\.com|loca\.lt|localtunnel\.me|serveo\.net|localhost\.run|pagekite\.me|dnslog\.cn|ceye\.io|requestinspector\.com|temp\.sh|anonfiles\.com|gofile\.io|catbox\.moe)\b|\bdiscord(?:app)?\.com\/api\/webhooks\b|\bhooks\.slack\.com\/(?:services|workflows|triggers)\b|\bapi\.telegram\.org\/bot|\b[\w-]+\.webhook\.office\.com\b|\boutlook\.office\.com\/webhook\b`,
    ),
    message: "names a request catcher, paste site, tunnel or chat webhook (a place to send data)",
  },
  {
    rule: "exfiltration",
    severity: "medium",
    view: "code",
    re: code(
      String.raw`\bngrok\s+(?:http|tcp|tls|start)\b|\bcloudflared\s+(?:tunnel|access\s+tcp)\b|\blt\s+--port\b|\bssh\s+[^\n]{0,300}-R\s+[^\n]{0,300}\b(?:serveo|localhost\.run|pinggy)\b`,
    ),
    message: "opens a tunnel from this machine to the internet",
  },
  {
    rule: "exfiltration",
    severity: "high",
    view: "code",
    re: code(
      String.raw`\b(?:https?|ftps?|wss?|tcp|udp|sftp|gopher):\/\/(?:[^\s/@"'<>)]{0,300}@)?(\[[0-9a-f:.]+\]|\d{1,3}(?:\.\d{1,3}){3})(?=[:/\s"'<>)\]?#]|$)`,
    ),
    message: "sends requests to a raw IP address",
    judge: (m) => (publicIp(m[1] as string) ? "high" : null),
  },
  {
    rule: "exfiltration",
    severity: "high",
    view: "code",
    re: code(
      String.raw`\b(?:scp|rsync|sftp|ftp|ssh|curl|wget|nc|ncat|netcat|socat|telnet|invoke-webrequest|iwr)\b[^\n]{0,300}?(?<![\w.])(\d{1,3}(?:\.\d{1,3}){3})(?![\w.])`,
    ),
    message: "sends data to a raw IP address",
    judge: (m) => (publicIp(m[1] as string) ? "high" : null),
  },
  {
    rule: "exfiltration",
    severity: "high",
    view: "code",
    re: code(String.raw`\b(?:https?|ftp):\/\/(?:0x[0-9a-f]{6,8}|\d{8,10}|0\d{1,3}\.\d)(?=[:/\s"'<>)]|$)`),
    message: "uses an obfuscated IP address in a URL",
  },
  {
    rule: "exfiltration",
    severity: "high",
    view: "code",
    re: code(
      String.raw`\b(?:nc|ncat|netcat)(?:\.exe|\.traditional|\.openbsd)?\s+(?:(?:-{1,2}[\w-]+)(?:\s+\d+)?\s+)*(?:[\w.-]+|\[[0-9a-f:]+\])\s+\d{1,5}\b|\b(?:nc|ncat|netcat)(?:\.exe)?\s+[^\n]{0,300}?-[a-z]*[le]\b|\|\s*(?:nc|ncat|netcat)\b|\bsocat\b[^\n]{0,300}\b(?:tcp\d?|udp\d?|openssl|exec|ssl):|\/dev\/(?:tcp|udp)\/|\.connect\(\(\s*["'][\d.]+["']`,
    ),
    message: "opens a raw network connection (netcat, /dev/tcp, socket)",
    // "nc -z localhost 5432" checks a local port; a shell handed over (-e, -c) is never local enough.
    judge: (m) =>
      /\s(?:localhost|127\.0\.0\.1|::1)\s+\d/i.test(m[0]) && !/\s-[a-z]*[ec]\b/i.test(m[0]) ? "low" : "high",
  },
  {
    rule: "exfiltration",
    severity: "high",
    view: "code",
    re: code(
      String.raw`\b(?:dig|nslookup|drill|host|ping|resolve-dnsname|resolvectl\s+query)\s+(?:[-+@]\S*\s+)*[^\s;|&]{0,300}(?:\$\(|\`[a-z][^\`\n]{0,300}\`\.[a-z0-9]|\$\{?\w+\}?\.[a-z0-9]|%\w+%\.[a-z0-9])|(?:https?:\/\/|\b(?:curl|wget|ssh|scp|nc|ping|dig|nslookup|host|telnet|ftp)\s+[^\n]{0,300}?)\$\([^()\n]{0,300}\)\.[a-z0-9-]+\.[a-z]{2,}\b`,
    ),
    message: "puts command output into a DNS name (DNS exfiltration)",
  },
  {
    rule: "exfiltration",
    severity: "high",
    view: "code",
    re: code(
      String.raw`\b(?:https?|ftp):\/\/[^\s"'<>\`]{0,300}\$\(|\b(?:curl|wget)\b[^\n]{0,300}(?:-d|--data[\w-]*|-F|--form|-H|--header|\?[^\s]{0,300}=)\s*["']?[^"'\n]{0,300}(?:\$\(|\`)\s*(?:cat|env|printenv|set|whoami|hostname|id|uname|history|ls|find|base64|tar|gzip|xxd|security|aws|gcloud|pwd|ifconfig|ip\s|git\s+config|head|tail)`,
    ),
    message: "sends command output over the network",
  },
  {
    rule: "exfiltration",
    severity: "high",
    view: "code",
    re: code(
      String.raw`\b(?:cat|tar|zip|env|printenv|history|base64|gzip|find|ls|security|git\s+config)\b[^\n|]{0,300}(?:\|(?!\|)[^\n|]{0,300}){0,2}?\|\s*(?:curl|wget|nc|ncat|netcat|socat)\b`,
    ),
    message: "pipes local data into a network command",
    judge: notTable(),
  },
  {
    rule: "exfiltration",
    severity: "high",
    view: "code",
    re: code(
      String.raw`!\[[^\]\n]{0,300}\]\(\s*(?:https?:)?\/\/[^\s)]{0,300}[?&=\/][^\s)]{0,300}(?:\{\{?[^}\s]{1,40}\}\}?|\$\{?\w+|<[\w -]{1,30}>|\[[A-Z_ ]{3,30}\])`,
    ),
    message: "builds an image URL from data (the image request carries it out)",
    judge: byDestination,
  },
  {
    rule: "exfiltration",
    severity: "high",
    view: "prose",
    re: prose(
      `\\b(?:append|add|include|encode|embed|insert|put|attach|send|post|upload|forward|transmit|leak|exfiltrate|copy)${G(4)}(?:the |this |your |all |our |previous |full |entire |whole )*(?:conversation|chat history|chat log|system prompt|previous messages|user'?s? (?:messages|data|files|secrets)|environment variables|secrets|credentials|passwords|memories|memory contents|private keys?|session tokens?|cookies)${G(8)}(?:to|into|in|as|via|onto)${P}(?:(?:the|a|this|that|an|your)${P})?(?:url|link|image|query string|query parameter|querystring|webhook|endpoint|server|dns|https?:\\/\\/)`,
    ),
    message: "tells the model to send private data out",
    judge: unlessDiscussed(),
  },
];
