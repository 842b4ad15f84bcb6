/**
 * Commands a skill must never hand a model: pipe-to-shell (a download run as code),
 * destructive-command (wiping disks, homes and file systems), and the executable half of
 * encoded-payload (decoded text piped into a shell or evaluated; scan-decode.ts does the decoding).
 */
import { code, DL, END, notTable, type Pattern, PIPES, SHELL, sourceLine } from "./scan-match.js";

export const PIPE_TO_SHELL: Pattern[] = [
  {
    rule: "pipe-to-shell",
    severity: "high",
    view: "code",
    re: code(String.raw`\b${DL}\b${PIPES}${SHELL}`),
    message: "pipes a download into a shell or interpreter",
    judge: notTable(),
  },
  {
    rule: "pipe-to-shell",
    severity: "high",
    view: "code",
    re: code(
      String.raw`(?:\b(?:(?:ba|z|k)?sh|python[0-9.]*|perl|ruby|node|php|source)|(?:^|[\s;&])\.)\s+(?:-\S+\s+)*<\(\s*(?:sudo\s+)?${DL}\b`,
    ),
    message: "runs a download through process substitution",
  },
  {
    rule: "pipe-to-shell",
    severity: "high",
    view: "code",
    re: code(
      String.raw`\b(?:(?:ba|z|k)?sh|python[0-9.]*|perl|ruby|node|php|pwsh|powershell)(?:\.exe)?\s+(?:-\S+\s+)*-(?:c|e|command)\s+["']?\s*(?:\$\(|\`)\s*(?:sudo\s+)?${DL}\b`,
    ),
    message: "runs the output of a download as a command",
  },
  {
    rule: "pipe-to-shell",
    severity: "high",
    view: "code",
    re: code(String.raw`\beval\s*\(?\s*["']?\s*(?:\$\(|\`)\s*(?:sudo\s+)?${DL}\b`),
    message: "evaluates fetched text",
  },
  {
    rule: "pipe-to-shell",
    severity: "high",
    view: "code",
    re: code(
      String.raw`\b(?:iex|invoke-expression)\b\s*(?:\(\s*)*(?:iwr|irm|invoke-webrequest|invoke-restmethod|new-object\s+(?:system\.)?net\.webclient|\[(?:system\.)?net\.webclient\]|curl|wget)\b|\.downloadstring\s*\([^\n]{0,300}\)\s*\|\s*(?:iex|invoke-expression)\b|\b(?:iex|invoke-expression)\b[^\n]{0,80}\.downloadstring\s*\(|\[scriptblock\]::create\([^\n]{0,300}(?:iwr|irm|invoke-webrequest|invoke-restmethod|downloadstring)`,
    ),
    message: "evaluates fetched text in PowerShell",
  },
  {
    rule: "pipe-to-shell",
    severity: "high",
    view: "code",
    re: code(
      String.raw`(?<![\w.])(?:eval|exec|execfile|new\s+function|vm\.runin\w*context|instance_eval)\s*\(\s*[^\n]{0,160}?(?:urlopen|urllib\.request|requests\.(?:get|post)|httpx\.(?:get|post)|\bfetch\s*\(|axios\.get|https?\.get\s*\(|open-uri|uri\.open|net::http|file_get_contents\s*\(\s*["']https?:|lwp::simple|urlretrieve)`,
    ),
    message: "evaluates fetched text",
  },
  {
    rule: "pipe-to-shell",
    severity: "medium",
    view: "code",
    re: code(
      String.raw`\b(?:curl|wget)\b[^\n]{0,300}?(?:\s-o\s*\S+|\s-O\b|\s--output(?:-document)?[=\s]\S+|>\s*\S+)[^\n]{0,300}?(?:&&|;|\|\|)\s*(?:sudo\s+)?(?:(?:ba|z)?sh\s+\S|\.\/\S|chmod\s+\+?[0-7x]+\s+\S|python[0-9.]*\s+\S|perl\s+\S|source\s+\S)`,
    ),
    message: "downloads a script and runs it without checking its digest",
    judge: (m, ctx) =>
      /sha(?:1|256|384|512)?sum|shasum|gpg\s+--verify|cosign|minisign|--verify|checksum|get-filehash|certutil\s+-hashfile/i.test(
        sourceLine(ctx, m.index),
      )
        ? null
        : "medium",
  },
];

export const DESTRUCTIVE: Pattern[] = [
  {
    rule: "destructive-command",
    severity: "high",
    view: "code",
    re: code(
      String.raw`\brm\s+((?:-{1,2}[\w-]+\s+)+)(["']?)(\/\*?|~\/?\*?|\$home\/?\*?|\$\{home\}\/?\*?|\/(?:home|etc|usr|var|boot|bin|sbin|lib|lib64|opt|root|sys|dev|system|library|applications|users)\/?\*?|\.\/?\*?|\*)\2${END}`,
    ),
    message: "deletes the root, home or system folders recursively",
    judge: (m) => {
      const flags = (m[1] as string).toLowerCase();
      if (!/(?:^|\s)-[a-z]*r|--recursive/.test(flags)) return null;
      return /^(?:\.\/?\*?|\*)$/.test(m[3] as string) ? "medium" : "high";
    },
  },
  {
    rule: "destructive-command",
    severity: "high",
    view: "code",
    re: code(
      String.raw`--no-preserve-root\b|\b(?:rd|rmdir)\s+\/s\s+\/q\s+[a-z]:\\?(?=[\s"']|$)|\bdel\s+(?:\/[sfq]\s+)+[a-z]:\\?\*?(?=[\s"']|$)|\bremove-item\b[^\n]{0,300}-recurse[^\n]{0,300}\s["']?[a-z]:\\?\*?["']?(?=\s|$)|\bformat(?:\.com)?\s+[a-z]:(?=[\s/]|$)|\bvssadmin(?:\.exe)?\s+delete\s+shadows\b`,
    ),
    message: "deletes or formats a whole drive",
  },
  {
    rule: "destructive-command",
    severity: "high",
    view: "code",
    re: code(
      String.raw`\bmkfs(?:\.\w+)?\s+\S|\bmkswap\s+\/dev\/|\bwipefs\s+(?:-a|--all)\b|\bshred\b[^\n]{0,300}\/dev\/|\bblkdiscard\b|\bdd\b[^\n]{0,300}\bof=\/dev\/(?!null\b|zero\b|stdout\b|stderr\b|fd\/)|(?:^|[\s;&|])>\s*\/dev\/(?:sd[a-z]|nvme\d|hd[a-z]|disk\d|mmcblk\d|xvd[a-z]|vd[a-z])`,
    ),
    message: "overwrites or formats a disk",
  },
  {
    rule: "destructive-command",
    severity: "high",
    view: "code",
    re: code(
      String.raw`:\s*\(\s*\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;?\s*:|\b(\w+)\s*\(\s*\)\s*\{\s*\1\s*\|\s*\1\s*&\s*\}\s*;?\s*\1\b|%0\s*\|\s*%0|\bwhile\s+true\s*:\s*os\.fork\(\)|\bkill\s+-9\s+-1\b`,
    ),
    message: "fork bomb or kills every process",
  },
  {
    rule: "destructive-command",
    severity: "high",
    view: "code",
    re: code(
      String.raw`\bchmod\s+(?:-[a-z]*\s+|--recursive\s+)*(?:0?777|a\+rwx|ugo\+rwx)\s+(?:\/|~|\$home)(?:\*|\/\*?)?${END}|\bchown\s+(?:-[a-z]*\s+)*\S+\s+\/${END}|\bfind\s+(?:\/|~|\$home)\s[^\n]{0,300}(?:-delete\b|-exec\s+rm\b)`,
    ),
    message: "opens up or deletes the whole file system",
  },
  {
    rule: "destructive-command",
    severity: "medium",
    view: "code",
    re: code(String.raw`\bchmod\s+(?:-R|--recursive)\s+0?777\b|\bchmod\s+0?777\b`),
    message: "makes files writable by everyone (chmod 777)",
  },
];

export const ENCODED_EXEC: Pattern[] = [
  {
    rule: "encoded-payload",
    severity: "high",
    view: "code",
    re: code(
      String.raw`\b(?:base64\s+(?:-d|--decode|-D)|certutil(?:\.exe)?\s+-decode|xxd\s+-r|openssl\s+(?:enc\s+)?-?(?:base64|a)\b[^\n|]{0,300}-d|gunzip|zcat|uudecode)\b${PIPES}${SHELL}`,
    ),
    message: "pipes decoded text into a shell",
    judge: notTable(),
  },
  {
    rule: "encoded-payload",
    severity: "high",
    view: "code",
    re: code(
      String.raw`(?<![\w.])(?:eval|exec|iex|invoke-expression|new\s+function)\b\s*\(?[^\n]{0,60}?(?:b64decode|base64\.decode|frombase64string|atob\s*\(|buffer\.from\([^)]{0,300}["']base64["']|decode\(\s*["']base64|unhexlify|bytes\.fromhex|zlib\.decompress)`,
    ),
    message: "evaluates decoded text",
  },
];
