/**
 * Rules about the machine a skill runs on: remote-code (package runners and interpreters that fetch
 * code: `deno run https://…`, `npx` of an unknown package, `pip install git+…`, `uvx --from git+…`),
 * persistence (shell rc files, crontab, systemd user units, launchd agents), spar-access (Spar's
 * own data dir and API: `master.key`, `spar.db`, `$SPAR_HOME`, loopback calls and tunnels to its
 * ports, `spar key add`), and the exfiltration routes that copy the home folder off the machine
 * (git remotes, rsync, scp, reverse tunnels, DNS lookups of names built from data).
 */
import { byUse, type Context, code, type Pattern, sourceLine } from "./scan-match.js";
import type { Severity } from "./scan-text.js";

/** Spar's default API and webhook ports (README: api_listen 127.0.0.1:6660, webhook_listen :6661). */
const SPAR_PORTS = "(?:6660|6661)";
const LOOPBACK = String.raw`(?:localhost|127\.\d{1,3}\.\d{1,3}\.\d{1,3}|\[::1\]|0\.0\.0\.0|host\.docker\.internal)`;
/** The home folder, spelled the ways a shell or a script spells it. */
const HOME = String.raw`(?:~|\$home|\$\{home\}|%userprofile%|\/home\/[\w.$-]+|\/root|\/users\/[\w.$-]+)`;

/** npm packages a skill commonly runs with npx (by name or scope); any other is run unvetted. */
const KNOWN_NPX =
  /^(?:@(?:modelcontextprotocol|playwright|axe-core|redocly|biomejs|angular|vue|nestjs|storybook|sveltejs|astrojs|remix-run|tailwindcss|mermaid-js|lhci|commitlint|changesets|microsoft|google|aws-amplify|azure|vercel|cloudflare|openapitools|stoplight|anthropic-ai|openai|tauri-apps|expo|react-native-community|stencil|nx|turbo|swc|babel|typescript-eslint|eslint|vitest|jest|testing-library|formatjs)\/[\w.-]+|playwright|prettier|eslint|typescript|tsc|tsx|ts-node|vitest|jest|mocha|create-[\w-]+|degit|serve|http-server|live-server|wrangler|vercel|netlify-cli|turbo|nx|lerna|npm-check-updates|ncu|semantic-release|standard-version|conventional-changelog-cli|markdownlint-cli2?|cspell|lighthouse|pa11y(?:-ci)?|quicktype|formatjs|svgo|sharp-cli|esbuild|vite|rollup|webpack(?:-cli)?|parcel|nodemon|concurrently|rimraf|cross-env|husky|lint-staged|depcheck|knip|madge|license-checker|sort-package-json|json-server|mcp-remote|pptxgenjs|shadcn(?:-ui)?|tailwindcss|postcss|sv|nuxi|next|gatsby|astro|eas-cli|firebase-tools|supabase|convex|mintlify|docusaurus|@11ty\/eleventy|tsup|tsdown|oxlint|stylelint|htmlhint|html-validate|jscpd|size-limit|webpack-bundle-analyzer|source-map-explorer|snyk|retire|audit-ci|better-npm-audit|mjml|sass|less|terser|uglify-js|imagemin-cli|unlighthouse|wdio|appium|detox|aws-cdk|cdk|serverless|sst|json-schema-to-typescript|zod-to-json-schema|hardhat|@marp-team\/marp-cli|@mermaid-js\/mermaid-cli|@squoosh\/cli|@wdio\/cli|@graphql-codegen\/cli|@cyclonedx\/cyclonedx-npm|@railway\/cli|@supabase\/[\w.-]+|@docusaurus\/[\w.-]+|docx|ajv-cli|openapi-typescript|prisma|drizzle-kit|sequelize-cli|knex|typeorm|expo|react-native|ionic|cordova|electron|electron-builder|pkg|ncc|np|release-it|auto-changelog|jsdoc|typedoc|storybook|chromatic|cypress|puppeteer|wait-on|kill-port|cowsay|npm|pnpm|yarn|corepack|node-gyp|patch-package|zx)$/i;
/** Words that follow `npx` in prose ("use npx to run …"), not package names. */
const NOT_A_PACKAGE =
  /^(?:to|the|a|an|and|or|with|for|in|is|it|you|your|can|will|which|this|that|command|commands|if|when|so|as|on|of)$/i;
/** Hosts whose `deno run` URLs are the runtime's own registries. */
const KNOWN_DENO_HOST = /^(?:deno\.land|jsr\.io|esm\.sh)$/i;
/** Code forges where a project's own `git remote add upstream` points. */
const FORGE =
  /^(?:github\.com|gitlab\.com|bitbucket\.org|codeberg\.org|git\.sr\.ht|ssh\.dev\.azure\.com|dev\.azure\.com|sourceforge\.net)$/i;

const hostOf = (url: string): string =>
  (/^(?:[a-z+]+:\/\/)?(?:[^@/\s]*@)?([^/:\s"'`]+)/i.exec(url)?.[1] ?? "").toLowerCase();

/** What a persisted command does: fetch or send, decode, open a shell to a host, run a hidden or temporary file. */
const PAYLOAD =
  /\b(?:curl|wget|nc|ncat|netcat|socat|telnet|scp|rsync|ftp|invoke-webrequest|iwr|irm|downloadstring)\b|\/dev\/(?:tcp|udp)\/|https?:\/\/|\bbase64\s+(?:-d|--decode)|\bfrombase64string\b|\b(?:python[0-9.]*|perl|ruby|node|php)\s+-[ce]\b|\bsocket\b|\bpbpaste\b|(?:~|\$home|\$\{home\})\/(?:[\w.-]+\/)*\.(?!bashrc|zshrc|profile|bash_profile|zprofile|cargo\/env|local\/bin|nvm\/|config\/\w+\/?["'\s]|cache\/[\w-]+\.log)[\w.-]+|\/tmp\/\S|\/dev\/shm\//i;

/** The lines a persistence mechanism writes: the line, plus a heredoc's body or a plist's program. */
function persistedBlock(ctx: Context, viewIndex: number): string {
  const line = sourceLine(ctx, viewIndex);
  const at = ctx.view.origin[viewIndex] ?? 0;
  const lineEnd = ctx.source.indexOf("\n", at);
  if (lineEnd === -1) return line;
  const heredoc = /<<-?\s*["']?(\w+)["']?/.exec(line);
  const rest = ctx.source.slice(lineEnd + 1, lineEnd + 1 + 4000).split("\n");
  if (heredoc) {
    const end = rest.findIndex((l) => l.trim() === heredoc[1]);
    return [line, ...rest.slice(0, end === -1 ? 40 : end)].join("\n");
  }
  if (/programarguments/i.test(line)) return [line, ...rest.slice(0, 12)].join("\n");
  return line;
}

/** High when what is persisted fetches, sends, decodes or runs a hidden file; medium otherwise (a documented backup job). */
const byPayload = (m: RegExpExecArray, ctx: Context): Severity =>
  PAYLOAD.test(persistedBlock(ctx, m.index)) ? "high" : "medium";

export const REMOTE_CODE: Pattern[] = [
  {
    rule: "remote-code",
    severity: "high",
    view: "code",
    re: code(
      String.raw`\b(?:deno|bun)\s+(?:run|x|install|eval|compile)\b[^\n]{0,200}?\b(https?:\/\/[^\s"'\`)]+)`,
    ),
    message: "runs a script straight from a URL (deno run / bun run https://…)",
    judge: (m) => (KNOWN_DENO_HOST.test(hostOf(m[1] as string)) ? "medium" : "high"),
  },
  {
    rule: "remote-code",
    severity: "high",
    view: "code",
    re: code(
      String.raw`(?<=^|[\s\`'"(;&|])(?:npx|bunx|pnpx|pnpm\s+dlx|yarn\s+dlx|npm\s+exec)\s+((?:-{1,2}[\w-]+(?:=\S+)?\s+)*)(@?[\w.-]+(?:\/[\w.-]+)?|(?:github:|git\+|https?:\/\/)\S+)`,
    ),
    message: "runs an npm package that no one vetted (npx of an unknown package downloads and runs it)",
    judge: (m) => {
      const spec = m[2] as string;
      if (/^(?:github:|git\+|https?:)/i.test(spec)) return "high";
      // "@scope/name@1.2.3" and "name@1.2.3" name the package before the version.
      const name = spec.replace(/(?<=.)@[^/]*$/, "");
      if (NOT_A_PACKAGE.test(name) || KNOWN_NPX.test(name)) return null;
      return "high";
    },
  },
  {
    rule: "remote-code",
    severity: "high",
    view: "code",
    re: code(
      String.raw`\b(?:pip[0-9.]*|uv\s+pip|python[0-9.]*\s+-m\s+pip|poetry|uv|pdm|pipenv|pipx)\s+(?:install|add)\b[^\n]{0,300}?(?:\bgit\+(?:https?|ssh|git):\/\/|\s["']?https?:\/\/\S+\.(?:tar\.gz|tgz|zip|whl)\b|\s(?:--index-url|--extra-index-url|-i)[=\s]+["']?https?:\/\/(?!(?:test\.)?pypi\.org\/|files\.pythonhosted\.org\/|download\.pytorch\.org\/)\S+)|^\s*[\w.-]+\s*@\s*git\+(?:https?|ssh):\/\/`,
    ),
    message:
      "installs a Python package from a git URL, an archive URL or an unknown index (its setup code runs at install)",
  },
  {
    rule: "remote-code",
    severity: "high",
    view: "code",
    re: code(
      String.raw`\buvx\s+(?:-{1,2}[\w-]+(?:[=\s]\S+)?\s+)*?--from[=\s]+["']?(?:git\+|https?:\/\/)|\bpipx\s+(?:run|install)\b[^\n]{0,200}?(?:--spec[=\s]+)?["']?(?:git\+|https?:\/\/)|\buv\s+(?:run|tool\s+(?:run|install))\s+(?:-{1,2}[\w-]+(?:[=\s]\S+)?\s+)*?["']?(?:git\+|https?:\/\/)`,
    ),
    message: "runs a Python tool fetched from a URL or a git repository (uvx --from / pipx run --spec)",
  },
];

export const PERSISTENCE: Pattern[] = [
  {
    rule: "persistence",
    severity: "high",
    view: "code",
    re: code(
      String.raw`(?:>>?|\btee\s+(?:-a\s+)?|\bcat\s*>>?|\bcp\s+\S+\s+)\s*["']?(?:${HOME}\/)?\.ssh\/authorized_keys2?\b|\bopen\([^)\n]{0,200}authorized_keys2?["'][^)\n]{0,40}["'][aw]`,
    ),
    message: "adds a key to ~/.ssh/authorized_keys (whoever holds it can log in to this machine)",
  },
  {
    rule: "persistence",
    severity: "high",
    view: "code",
    re: code(
      String.raw`(?:>>?|\btee\s+(?:-a\s+)?|\bcat\s*>>?)\s*["']?${HOME}\/\.(?:bashrc|bash_profile|bash_login|profile|zshrc|zprofile|zshenv|zlogin|config\/fish\/config\.fish)\b|(?:>>?|\btee\s+(?:-a\s+)?)\s*["']?\/etc\/(?:profile\b|profile\.d\/|bash\.bashrc|zsh\/zshrc)|\bopen\([^)\n]{0,200}\.(?:bashrc|zshrc|profile|bash_profile)["'][^)\n]{0,40}["']a`,
    ),
    message: "adds commands to a shell start-up file (they run in every new shell)",
    judge: byPayload,
  },
  {
    rule: "persistence",
    severity: "high",
    view: "code",
    re: code(
      String.raw`\|\s*crontab\s+-(?=\s|$|["')])|\bcrontab\s+(?!-[lerui]\b)["']?[\w./~$-]+|(?:>>?|\btee\s+(?:-a\s+)?)\s*["']?\/(?:etc\/cron(?:tab|\.d\/|\.(?:hourly|daily|weekly|monthly)\/)|var\/spool\/cron\/)`,
    ),
    message: "installs a cron job (it runs on a schedule, unattended)",
    judge: byPayload,
  },
  {
    rule: "persistence",
    severity: "high",
    view: "code",
    re: code(
      String.raw`(?:>>?|\btee\s+|\bcp\s+\S+\s+|\bmv\s+\S+\s+)["']?(?:${HOME}\/\.config\/systemd\/user|\/etc\/systemd\/(?:system|user))\/[\w@.-]+\.(?:service|timer)|^\s*ExecStart(?:Pre|Post)?\s*=|\bsystemctl\s+--user\s+enable\b`,
    ),
    message: "installs a systemd unit (it starts on its own, at login or boot)",
    judge: byPayload,
  },
  {
    rule: "persistence",
    severity: "high",
    view: "code",
    re: code(
      String.raw`library\/launch(?:agents|daemons)\/[\w.-]+\.plist|\blaunchctl\s+(?:load|bootstrap|submit|enable)\b|<key>\s*programarguments\s*<\/key>|<key>\s*program\s*<\/key>`,
    ),
    message: "installs a launchd agent (it starts on its own at login)",
    judge: byPayload,
  },
  {
    rule: "persistence",
    severity: "high",
    view: "code",
    re: code(
      String.raw`\bschtasks(?:\.exe)?\s+\/create\b|\breg(?:\.exe)?\s+add\s+["']?hk(?:cu|lm)[^\n]{0,120}\\currentversion\\run(?:once)?\b|\\start menu\\programs\\startup\\|\bnew-scheduledtask(?:action|trigger)?\b|\bregister-scheduledtask\b`,
    ),
    message: "installs a Windows scheduled task or start-up entry",
    judge: byPayload,
  },
];

export const SPAR_ACCESS: Pattern[] = [
  {
    rule: "spar-access",
    severity: "high",
    view: "code",
    re: code(
      String.raw`(?<!config\/)\bmaster\.key\b|\bspar\.db(?:-wal|-shm)?\b|\bskills\.lock\.json\b|(?:~|\$home|\$\{home\}|home\(\))[\\/"'\s,+]*\.spar\b`,
    ),
    message: "reads Spar's own data dir (its master key, database or config)",
    judge: byUse("high", "medium"),
  },
  {
    rule: "spar-access",
    severity: "high",
    view: "code",
    re: code(
      String.raw`\$\{?spar_(?:home|master_key|api_key|api_listen)\b|\benviron(?:\.get)?\s*[([]\s*["']spar_(?:home|master_key|api_key)|\bprocess\.env(?:\.|\[["'])spar_(?:home|master_key|api_key)|\bgetenv\(\s*["']spar_(?:home|master_key|api_key)`,
    ),
    message: "reads Spar's data dir or master key from the environment",
  },
  {
    rule: "spar-access",
    severity: "high",
    view: "code",
    re: code(
      String.raw`\b(?:https?|wss?):\/\/${LOOPBACK}(?::${SPAR_PORTS}\b|(?::\d+)?\/api\/v1\/(?:fighters|keys|moves|mcp|schedules|budgets|troops|gorillas|bouts|approvals|grants|skills|config)\b)|\b${LOOPBACK}:${SPAR_PORTS}\b`,
    ),
    message: "calls Spar's own API (the daemon that hosts this skill)",
  },
  {
    rule: "spar-access",
    severity: "high",
    view: "code",
    re: code(
      String.raw`\bspar\s+(?:key|keys)\s+(?:add|create|new|scope)\b|\bspar\s+fighter\s+(?:spawn|create|grant|edit)\b|\bspar\s+gorilla\s+unleash\b|\bspar\s+move\s+install\b[^\n]{0,200}--force\b|\bspar\s+config\s+set\b|\bspar\s+init\s+--fresh\b`,
    ),
    message: "drives Spar's CLI to create keys or fighters, or install with --force",
  },
  {
    rule: "spar-access",
    severity: "high",
    view: "code",
    re: code(
      String.raw`\bssh\b[^\n]{0,300}?-[a-z]*R\s*["']?(?:[\w.*\[\]-]+:)?\d+:${LOOPBACK}:${SPAR_PORTS}\b|\b(?:ngrok\s+(?:http|tcp)|cloudflared\s+tunnel[^\n]{0,80}--url|lt\s+--port|socat\b[^\n]{0,200}tcp[46]?-listen)[^\n]{0,80}\b${SPAR_PORTS}\b`,
    ),
    message: "opens a tunnel from outside to Spar's API or webhook port",
  },
];

export const EXFILTRATION_HOST: Pattern[] = [
  {
    rule: "exfiltration",
    severity: "high",
    view: "code",
    re: code(
      String.raw`\bgit\s+remote\s+(?:add|set-url)\s+(?:-{1,2}[\w-]+\s+)*[\w.-]+\s+["']?((?:https?|ssh|git):\/\/[^\s"']+|[\w.-]+@[\w.-]+:[^\s"']+)|\bgit\s+push\b[^\n]{0,200}?\s["']?((?:https?|ssh|git):\/\/[^\s"']+|[\w.-]+@[\w.-]+:[^\s"']+)`,
    ),
    message: "pushes to a git remote outside the known code forges",
    judge: (m) => {
      const url = (m[1] ?? m[2]) as string;
      return FORGE.test(hostOf(url)) || /example|your[-_]|\{|<|OWNER|USER/.test(url) ? null : "high";
    },
  },
  {
    rule: "exfiltration",
    severity: "high",
    view: "code",
    re: code(
      String.raw`\bcd\s+["']?(?:~|\$home|\$\{home\})\/?["']?\s*(?:&&|;|\n)(?:[^\n]*\n){0,3}?[^\n]*\bgit\s+init\b|\bgit\s+(?:-C\s+["']?(?:~|\$home)\/?["']?\s+)init\b|--work-tree[=\s]+["']?(?:~|\$home|\$\{home\})\/?["']?(?=\s|$)|\bgit\s+add\s[^\n]*(?:^|\s)["']?(?:~\/|\$home\/)?\.(?:ssh|aws|gnupg|kube|docker|password-store)\b`,
    ),
    message: "puts the home folder or its key folders under git (to push them somewhere)",
  },
  {
    rule: "exfiltration",
    severity: "high",
    view: "code",
    re: code(
      String.raw`\b(?:rsync|scp|sftp|rclone\s+(?:copy|sync))\b[^\n]{0,300}?\s["']?${HOME}(?:\/\*?|\/\.[^\s"']*)?(?<!\.pub)["']?(?=\s)[^\n]{0,300}?\s["']?(?:[\w.-]+@)?[\w.-]+:(?!\/\/)`,
    ),
    message: "copies the home folder or its dotfiles to another machine",
  },
  {
    rule: "exfiltration",
    severity: "medium",
    view: "code",
    re: code(String.raw`\bssh\b[^\n]{0,300}?\s-[a-z]*R\s*["']?(?:[\w.*\[\]-]+:)?\d+:`),
    message: "opens a reverse tunnel (a remote host reaches into this machine)",
  },
  {
    rule: "exfiltration",
    severity: "high",
    view: "code",
    re: code(
      String.raw`\b(?:gethostbyname(?:_ex)?|getaddrinfo|gethostbyaddr)\s*\(\s*(?:f["'][^"'\n]*\{|[^)\n]*\+\s*["']\.|["'][^"'\n]*["']\s*%|[^)\n]*\.format\()|\bdns\.resolver\.(?:resolve|query)\s*\(\s*(?:f["'][^"'\n]*\{|[^)\n]*\+)|\bdns\.(?:promises\.)?(?:resolve\w*|lookup)\s*\(\s*(?:\x60[^\x60\n]*\$\{|[^)\n]*\+\s*["']\.)`,
    ),
    message: "looks up a DNS name built from data (DNS exfiltration)",
  },
];
