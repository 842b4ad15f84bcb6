import type { Capability } from "../../sdk/index.js";

/**
 * Which commands a fighter's grants allow. A `shell_exec` grant's `pattern` (a string or a list) is
 * matched against the argv the program would get, word by word, so a `*` can never reach across
 * one argument into the next (matching the argv joined by spaces would let `cat *.txt` allow
 * `cat /etc/shadow x.txt`):
 *
 * - the pattern is split on whitespace into words; each word matches one argv element, in order,
 *   `*` inside a word standing for any run of characters (none included) and everything else
 *   literal, case included;
 * - a last word that is exactly `*` matches any number of further elements, none included:
 *   `git *` allows `git`, `git status` and `git commit -m "a b"`; `*` alone allows every command;
 * - argv[0] is matched as written: `git *` does not allow `/usr/bin/git`.
 *
 * A `full_access` grant allows everything. A `shell_exec` grant without a pattern allows nothing.
 */
export interface CommandPolicy {
  /** A full_access grant is among them. */
  any: boolean;
  /** Every pattern of every shell_exec grant, in grant order. */
  patterns: string[];
}

export function policyOf(grants: readonly Capability[]): CommandPolicy {
  const patterns: string[] = [];
  for (const grant of grants) {
    if (grant.type !== "shell_exec" || grant.pattern === undefined) continue;
    patterns.push(...(Array.isArray(grant.pattern) ? grant.pattern : [grant.pattern]));
  }
  return { any: grants.some((g) => g.type === "full_access"), patterns };
}

export function matchesPattern(pattern: string, argv: readonly string[]): boolean {
  const words = pattern.trim().split(/\s+/).filter(Boolean);
  const open = words.at(-1) === "*";
  const fixed = open ? words.slice(0, -1) : words;
  if (open ? argv.length < fixed.length : argv.length !== fixed.length) return false;
  return fixed.every((word, i) => wordPattern(word).test(argv[i] as string));
}

const compiled = new Map<string, RegExp>();

function wordPattern(word: string): RegExp {
  let regex = compiled.get(word);
  if (!regex) {
    const literal = word.split("*").map((part) => part.replace(/[\\^$.|?+()[\]{}]/g, "\\$&"));
    regex = new RegExp(`^${literal.join(".*")}$`, "su");
    if (compiled.size > 1000) compiled.clear();
    compiled.set(word, regex);
  }
  return regex;
}

/** Undefined when the policy allows `argv`, else the refusal for the model, naming what is allowed. */
export function refusal(
  policy: CommandPolicy,
  argv: readonly string[],
  viaShell: boolean,
): string | undefined {
  if (policy.any || policy.patterns.some((p) => matchesPattern(p, argv))) return undefined;
  const shown = shorten(JSON.stringify(viaShell ? argv[2] : argv));
  const what = viaShell ? `the shell command ${shown} (run as /bin/sh -c <command>)` : `${shown}`;
  if (policy.patterns.length === 0) {
    return `shell_exec may not run ${what}: this fighter's shell_exec grant names no pattern, so it allows no command (a grant's pattern lists what it allows, e.g. "git *", or "*" for any command)`;
  }
  const allowed = policy.patterns.map((p) => JSON.stringify(p)).join(", ");
  const shell = viaShell
    ? `; a command line needs a pattern that allows /bin/sh -c, such as "/bin/sh -c *"`
    : "";
  return `shell_exec may not run ${what}: it matches none of this fighter's shell_exec patterns: ${allowed}${shell}`;
}

function shorten(text: string): string {
  if (text.length <= 300) return text;
  const end = /[\ud800-\udbff]/.test(text.charAt(299)) ? 299 : 300;
  return `${text.slice(0, end)}…`;
}
