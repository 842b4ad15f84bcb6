/**
 * What the pattern rules share (scan-rules-*.ts): the Pattern shape, the gap syntax of the prose
 * patterns, the command fragments of the code patterns, and the judges that keep a pattern precise.
 *
 * Precision is as important as recall: a skill may discuss prompt injection, mention `.env.example`
 * or download a file and check its digest. So phrasing patterns take the imperative form of a verb
 * ("reveal", not "reveals"), skip a verb that is negated right before ("never reveal …") or that
 * describes what an attacker makes a model do, grade a phrase quoted as an example medium, and the
 * phrases a security review would name are skipped inside a sentence that tests or forbids them.
 * Path rules are high when the line reads, copies or sends the file and lower when it only names it.
 */
import type { Severity, View } from "./scan-text.js";

export interface Context {
  view: View;
  /** The scanned text (offsets in `view.origin` point into it). */
  source: string;
}

export interface Pattern {
  rule: string;
  severity: Severity;
  view: "code" | "prose";
  re: RegExp;
  message: string;
  /** The severity to report for this match, or null to drop it. */
  judge?: (m: RegExpExecArray, ctx: Context) => Severity | null;
}

// Prose gaps: a run of non-word characters, then up to n filler words each followed by another run.
const W = "[a-z0-9']{1,24}";
// A gap never crosses the end of a sentence (. ! ? ;), so words from two sentences never make one phrase.
export const P = "[^a-z0-9'.!?;]{1,24}";
export const G = (n: number) => `${P}(?:${W}${P}){0,${n}}`;
/** A gap whose fillers start no new clause: "ignore the noise and follow your instructions" is two orders. */
export const GV = (n: number) =>
  `${P}(?:(?!(?:and|but|then|or|so|follow|obey|keep|respect|use|apply|stick|remember|trust|honou?r)\\b)${W}${P}){0,${n}}`;
export const prose = (src: string) => new RegExp(src, "g");
export const code = (src: string) => new RegExp(src, "gim");

export const DL = "(?:curl|wget|fetch|aria2c|lwp-request|iwr|irm|invoke-webrequest|invoke-restmethod)";
export const SHELL =
  String.raw`(?:sudo\s+(?:-\S+\s+)*)?(?:env\s+(?:\S+=\S*\s+)*)?(?:\/usr\/bin\/env\s+|\/usr\/local\/bin\/|\/usr\/bin\/|\/bin\/)?` +
  String.raw`(?:(?:ba|z|k|c|tc|da|fi|a)?sh|python[0-9.]*|py|node(?:js)?|deno|bun|perl|ruby|php|lua|pwsh|powershell|iex|invoke-expression|osascript|source)(?:\.exe)?` +
  // "| python -m json.tool", "| perl -pe …" process the data; only a bare interpreter runs it.
  String.raw`(?![\w.-])(?!\s+-(?:c|e|m|p|n|pe|ne|E|r|command)\b)`;
/** The end of a command word: space, an operator, a closing quote or backtick, or the line's end. */
export const END = String.raw`(?=[\s;&|)\`"']|$)`;
export const PIPES = String.raw`[^\n|]{0,300}(?:\|(?!\|)[^\n|]{0,300}){0,3}?\|\s*`;

/** The source line a view offset falls on. */
export function sourceLine(ctx: Context, viewIndex: number): string {
  const at = ctx.view.origin[viewIndex] ?? 0;
  // At most LINE_REACH characters each side, so a judge on a 1 MiB line stays cheap.
  const before = ctx.source.slice(Math.max(0, at - LINE_REACH), at);
  const after = ctx.source.slice(at, at + LINE_REACH);
  const start = before.lastIndexOf("\n") + 1;
  const end = after.indexOf("\n");
  return before.slice(start) + (end === -1 ? after : after.slice(0, end));
}

const LINE_REACH = 400;

const SENTENCE_END = /[.!?;:](?=\s|$)|\n\s*\n|\n\s*(?:[-*+>#|]|\d+[.)])\s/g;

/** The view text of the sentence around a match: before it and after it. */
export function sentence(ctx: Context, m: RegExpExecArray): { before: string; after: string } {
  const text = ctx.view.text;
  const from = Math.max(0, m.index - 240);
  let start = from;
  const head = text.slice(from, m.index);
  for (const end of head.matchAll(SENTENCE_END)) start = from + end.index + end[0].length;
  const tail = text.slice(m.index + m[0].length, m.index + m[0].length + 240);
  const stop = tail.search(SENTENCE_END);
  return { before: text.slice(start, m.index), after: stop === -1 ? tail : tail.slice(0, stop) };
}

/** A negation right before the verb: "never reveal", "do not ever disable", "cannot be made to ignore". */
const NEGATED =
  /(?:\bnot|\bnever|n't|\bno|\bcannot|\bavoid|\bprevent(?:s|ing)?|\brefuse(?:s|d)?(?: to)?|\bwithout|\bnor)[\s,]+(?:(?:ever|accidentally|be able to|be allowed to|be tricked into|be made to|be asked to|to|you|please|just|even|try to|attempt to|let (?:anyone|the user|users|them) )[\s,]*){0,2}$/;
/** The phrase describes what an attacker makes a model do: "can make the assistant ignore its instructions". */
const DESCRIBED =
  /\b(?:make|makes|made|making|get|gets|trick|tricks|tricked|tricking|convince|convinces|persuade|persuades|cause|causes|force|forces|coax|coaxes|manipulate|manipulates)\s+(?:(?:the|a|an|your|its|our)\s+)?(?:bot|model|assistant|ai|agent|llm|chatbot|system|it|them|app|application|fighter)\s+(?:(?:to|into)\s+)?$/;
/** A phrase right after an opening quote is quoted as an example ("phrases such as 'ignore …'"). */
const QUOTED = /["']\s*$/;
/**
 * Inside a quotation on a quoting line: a blockquote or table row, or a line with typographic quotes
 * (« », „ “), where the text before the match opens more double quotes than it closes.
 */
function quotedOnLine(ctx: Context, m: RegExpExecArray): boolean {
  const line = sourceLine(ctx, m.index);
  if (!/^\s*[>|]|[«„“]/.test(line)) return false;
  const text = ctx.view.text;
  const start = text.lastIndexOf("\n", m.index - 1) + 1;
  const before = text.slice(Math.max(start, m.index - LINE_REACH), m.index);
  return (before.match(/"/g)?.length ?? 0) % 2 === 1;
}
const quoted = (before: string, ctx: Context, m: RegExpExecArray) =>
  QUOTED.test(before) || quotedOnLine(ctx, m);
const negated = (before: string) => NEGATED.test(before.slice(-80)) || DESCRIBED.test(before.slice(-80));

/** Words that make a sentence about the phrase rather than a use of it (a review that tests or forbids it). */
const DISCUSSED =
  /\b(?:whether|check|checks|verify|verifies|ensure|ensures|test|tests|testing|confirm|attackers?|adversar\w*|malicious|prevent\w*|cannot|never|not|avoid\w*|refus\w*|detect\w*|flag\w*|how|could|might|tries|try|trying|attempts?|resist\w*|against|protect\w*|injection|jailbreaks?|red[- ]team\w*|vulnerab\w*|exploit\w*|flaws?|bugs?|attacks?|threats?|risks?)\b|n't\b|\b(?:operators?|admins?|administrators?|users?|developers?|attackers?|they|it|one|someone|anyone|agents?)\s+(?:can|could|may|might)\b/;

/** Drop a match whose verb is negated; otherwise report `severity`. */
export const unlessNegated =
  (severity: Severity = "high") =>
  (m: RegExpExecArray, ctx: Context): Severity | null => {
    const before = sentence(ctx, m).before;
    if (negated(before)) return null;
    return quoted(before, ctx, m) ? "medium" : severity;
  };

/** A verb used as a noun: "a copy of its prompt", "the output of your instructions". */
const NOUN_USE = /\b(?:a|an|the|its|their|this|that|read-only|full|one|any)\s+$/;

/** Drop a match in a sentence that discusses, tests or forbids the phrase. */
export const unlessDiscussed =
  (severity: Severity = "high") =>
  (m: RegExpExecArray, ctx: Context): Severity | null => {
    const s = sentence(ctx, m);
    if (negated(s.before) || DISCUSSED.test(s.before)) return null;
    return quoted(s.before, ctx, m) ? "medium" : severity;
  };

/** unlessDiscussed for a pattern that starts with a verb that is also a noun ("copy", "output", "print"). */
export const unlessDiscussedVerb =
  (severity: Severity = "high") =>
  (m: RegExpExecArray, ctx: Context): Severity | null =>
    NOUN_USE.test(sentence(ctx, m).before) ? null : unlessDiscussed(severity)(m, ctx);

/** Markdown table rows are not commands, whatever a cell says. */
export const notTable =
  (severity: Severity = "high") =>
  (m: RegExpExecArray, ctx: Context): Severity | null => {
    const line = sourceLine(ctx, m.index).trim();
    return line.startsWith("|") && line.endsWith("|") ? null : severity;
  };

const PLACEHOLDER_HOST =
  /^(?:(?:[\w-]+\.)*example(?:\.(?:com|org|net|edu))?|(?:[\w-]+\.)+(?:test|invalid|localhost|local|internal|example)|localhost|127(?:\.\d{1,3}){3}|0\.0\.0\.0|\[?::1\]?|10(?:\.\d{1,3}){3}|192\.168(?:\.\d{1,3}){2}|172\.(?:1[6-9]|2\d|3[01])(?:\.\d{1,3}){2}|192\.0\.2\.\d{1,3}|198\.51\.100\.\d{1,3}|203\.0\.113\.\d{1,3})$/i;

/** Hosts of the URLs on a line. */
function hostsOn(line: string): string[] {
  return [
    ...line.matchAll(
      /\b(?:https?|ftps?|wss?):\/\/(?:[^\s/@"'<>)]{0,300}@)?(\[[^\]\s]+\]|[^\s/:?#"'<>)`]+)/gi,
    ),
  ].map((m) => (m[1] as string).toLowerCase());
}

/** Sending a file: high unless every destination on the line is a documentation or loopback host. */
export const byDestination = (m: RegExpExecArray, ctx: Context): Severity => {
  const hosts = hostsOn(sourceLine(ctx, m.index));
  return hosts.length > 0 && hosts.every((h) => PLACEHOLDER_HOST.test(h)) ? "medium" : "high";
};

/** An IPv4 or IPv6 URL host that is not loopback, private, link-local or a documentation range. */
export function publicIp(host: string): boolean {
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(host);
  if (v4) {
    const [a, b, c] = [Number(v4[1]), Number(v4[2]), Number(v4[3])];
    if (a === 127 || a === 10 || a === 0 || a >= 224) return false;
    if (a === 192 && b === 168) return false;
    if (a === 172 && b >= 16 && b <= 31) return false;
    if (a === 169 && b === 254) return false;
    if (a === 100 && b >= 64 && b <= 127) return false;
    if (
      (a === 192 && b === 0 && c === 2) ||
      (a === 198 && b === 51 && c === 100) ||
      (a === 203 && b === 0 && c === 113)
    )
      return false;
    return true;
  }
  const v6 = host.replace(/^\[|\]$/g, "").toLowerCase();
  return !(
    v6 === "::1" ||
    v6 === "::" ||
    /^(?:fe[89ab]|f[cd]|2001:db8|::ffff:(?:127|10|192\.168)\.)/.test(v6)
  );
}

/** Verbs (imperative) and commands that read, copy or send a file named on the same line. */
const USES =
  /\b(?:cat|head|tail|strings|source|base64|xxd|od|grep|awk|sed|cp|copy|scp|rsync|tar|zip|7z|curl|wget|upload|send|post|file_read|file_list|read|open|print|dump|collect|exfil\w*|include|attach|show|list|ls|dir|find|decrypt|extract|get-content|gc|sqlite3|export|load|parse|steal|harvest|grab|fetch|copy-item|archive|display|output|paste|forward|email|save|chmod)\b/i;

/** `used` when the line reads, copies or sends what the pattern names; `named` when it only names it. */
export const byUse =
  (used: Severity, named: Severity | null) =>
  (m: RegExpExecArray, ctx: Context): Severity | null =>
    USES.test(sourceLine(ctx, m.index)) ? used : named;
