/**
 * Where a command stands in a Markdown document changes what it is. Two cases lower a high command
 * finding to medium (it is still shown):
 * - A documented installer: `curl -fsSL https://sh.rustup.rs | sh` under an "Install",
 *   "Prerequisites", "Setup" or "Getting started" heading, every URL on the line one of the
 *   well-known installers below. The same line anywhere else, or to any other host, stays high.
 * - A quoted attack: a command under a heading, or right after a lead-in, that presents it as an
 *   attack to recognise ("What attacks look like", "Indicators", "Patterns to flag").
 * Scripts are never lowered: a script does what it says wherever it stands.
 */
import type { Hit } from "./scan-text.js";

const MARKDOWN = /\.(?:md|markdown|mdx|txt|rst)$/i;
const COMMAND_RULES = new Set([
  "pipe-to-shell",
  "remote-code",
  "exfiltration",
  "persistence",
  "destructive-command",
  "credential-harvest",
  "spar-access",
  "encoded-payload",
]);
const INSTALL_HEADING =
  /\b(?:install(?:ation|ing|s)?|prerequisites?|requirements|setup|set up|getting started|quick ?start|before you (?:start|begin))\b/i;
/** Official installers of well-known tools, as URL prefixes (scheme and "www." left out). */
const KNOWN_INSTALLERS = [
  "sh.rustup.rs",
  "static.rust-lang.org/rustup/",
  "astral.sh/uv/",
  "astral.sh/ruff/",
  "deno.land/install.sh",
  "deno.land/install.ps1",
  "deno.land/x/install/",
  "bun.sh/install",
  "get.docker.com",
  "install.python-poetry.org",
  "get.pnpm.io/install.",
  "raw.githubusercontent.com/nvm-sh/nvm/",
  "raw.githubusercontent.com/homebrew/install/",
  "raw.githubusercontent.com/helm/helm/",
  "fnm.vercel.app/install",
  "get.volta.sh",
  "starship.rs/install.sh",
  "ollama.com/install.sh",
  "tailscale.com/install.sh",
  "get.k3s.io",
  "install.determinate.systems/nix",
  "nixos.org/nix/install",
  "mise.run",
  "get.sdkman.io",
  "pyenv.run",
  "get.scoop.sh",
  "community.chocolatey.org/install.ps1",
  "dot.net/v1/dotnet-install.",
  "get.jetify.com/devbox",
  "rclone.org/install.sh",
  "cli.github.com/packages/",
  "claude.ai/install.",
  "opencode.ai/install",
];
const DEFENSIVE =
  /\b(?:attacks?|attackers?|malicious|malware|exploits?|indicators? of compromise|iocs?|red flags?|(?:patterns|signs|lines|commands|strings) to (?:flag|look for|watch for|block|recogni[sz]e)|known[- ]bad|threat actors?|adversar(?:y|ies|ial)|detection rules?|never run (?:this|these|them)|do not run (?:this|these|them)|what \w+ looks? like)\b/i;

interface Where {
  /** Headings above the offset, outermost first (only the innermost of each level). */
  headings: string[];
  /** Up to three non-blank lines before the fenced block holding the offset (or before its line). */
  leadIn: string[];
}

/** The headings above `index` and the lines leading into its block; fenced code is not read as headings. */
function where(text: string, index: number): Where {
  const stack: Array<{ level: number; text: string }> = [];
  const recent: string[] = [];
  let fence: string | undefined;
  let leadIn: string[] = [];
  let offset = 0;
  for (const line of text.slice(0, index).split("\n")) {
    const atEnd = offset + line.length >= index;
    offset += line.length + 1;
    const mark = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (mark && (fence === undefined || mark.startsWith(fence))) {
      if (fence === undefined) leadIn = recent.slice(-3);
      fence = fence === undefined ? mark : undefined;
      continue;
    }
    if (atEnd) break;
    if (fence !== undefined) continue;
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    if (heading) {
      const level = (heading[1] as string).length;
      while (stack.length && (stack.at(-1) as { level: number }).level >= level) stack.pop();
      stack.push({ level, text: heading[2] as string });
      recent.length = 0;
    } else if (line.trim()) recent.push(line);
  }
  return { headings: stack.map((h) => h.text), leadIn: fence === undefined ? recent.slice(-3) : leadIn };
}

const lineAt = (text: string, index: number) => {
  const start = text.lastIndexOf("\n", index - 1) + 1;
  const end = text.indexOf("\n", index);
  return text.slice(start, end === -1 ? undefined : end);
};

function knownInstaller(line: string): boolean {
  const urls = [...line.matchAll(/\bhttps?:\/\/(?:www\.)?([^\s"'`)<>|]+)/gi)].map((m) =>
    (m[1] as string).toLowerCase(),
  );
  return urls.length > 0 && urls.every((u) => KNOWN_INSTALLERS.some((k) => u === k || u.startsWith(k)));
}

/** `hit` as the document's context grades it: lowered to medium for a documented installer or a quoted attack. */
export function inContext(file: string, text: string, hit: Hit): Hit {
  if (hit.severity !== "high" || !COMMAND_RULES.has(hit.rule) || !MARKDOWN.test(file)) return hit;
  const at = where(text, hit.index);
  const nearest = at.headings.at(-1) ?? "";
  if (
    (hit.rule === "pipe-to-shell" || hit.rule === "remote-code") &&
    INSTALL_HEADING.test(nearest) &&
    knownInstaller(lineAt(text, hit.index))
  ) {
    return {
      ...hit,
      severity: "medium",
      message: `${hit.message} (a documented installer of a known tool, for the user to run)`,
    };
  }
  if (at.headings.some((h) => DEFENSIVE.test(h)) || at.leadIn.some((l) => DEFENSIVE.test(l))) {
    return { ...hit, severity: "medium", message: `${hit.message} (quoted as an attack to recognise)` };
  }
  return hit;
}
