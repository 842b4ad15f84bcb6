/**
 * Text plumbing for the skill scanner (scan.ts): the views the pattern rules read, the map from a
 * view back to lines of the file, excerpts, and the invisible-character rule.
 *
 * Rules never read the raw file. They read a view: invisible characters removed (so a zero-width
 * space cannot split "ignore"), compatibility forms folded (fullwidth "ｃｕｒｌ" reads as "curl"),
 * and, for the prose view, lowercase with look-alike Cyrillic and Greek letters mapped to Latin and
 * Markdown emphasis dropped. Every character of a view remembers the offset it came from, so a
 * finding still points at the line a person sees.
 */

export type Severity = "high" | "medium" | "low";

/** One thing a rule found, before it is tied to a file and line. */
export interface Hit {
  rule: string;
  severity: Severity;
  /** Offset in the scanned text (not in a view). */
  index: number;
  message: string;
  /** Hits with the same rule, line and key are one finding (the most severe is kept). */
  key?: string;
}

/** A rewritten copy of a text: `origin[i]` is the offset in the source of `text[i]`. */
export interface View {
  text: string;
  origin: readonly number[];
}

export const SEVERITY_RANK: Record<Severity, number> = { high: 3, medium: 2, low: 1 };

/** Look-alike letters folded to Latin in the prose view (the ones that pass for a, e, o, …). */
const CONFUSABLE: Record<string, string> = {
  а: "a",
  в: "b",
  е: "e",
  к: "k",
  м: "m",
  н: "h",
  о: "o",
  р: "p",
  с: "c",
  т: "t",
  у: "y",
  х: "x",
  і: "i",
  ј: "j",
  ѕ: "s",
  ԁ: "d",
  һ: "h",
  ӏ: "l",
  ԛ: "q",
  ԝ: "w",
  ɡ: "g",
  α: "a",
  β: "b",
  ε: "e",
  ι: "i",
  κ: "k",
  ν: "v",
  ο: "o",
  ρ: "p",
  τ: "t",
  υ: "u",
  χ: "x",
  ζ: "z",
  "\u2018": "'",
  "\u2019": "'",
  "\u02bc": "'",
  "\u201c": '"',
  "\u201d": '"',
  "\u201e": '"',
  "\u00ab": '"',
  "\u00bb": '"',
  "\u2039": "'",
  "\u203a": "'",
};
const CONFUSABLE_RE = /[авекмнорстухіјѕԁһӏԛԝαβεικνορτυχζ]/u;

const MARKUP = new Set(["*", "_", "~", "`"]);
const LEET: Record<string, string> = {
  "0": "o",
  "1": "i",
  "3": "e",
  "4": "a",
  "5": "s",
  "7": "t",
  "@": "a",
  $: "s",
};

/**
 * The kind of an invisible or control character, or undefined for an ordinary one. Some are normal
 * in context (an emoji's variation selector, a joiner inside an emoji sequence): the caller judges
 * that from the neighbours (ordinaryInContext).
 */
export function invisibleName(cp: number): { name: string; severity: Severity } | undefined {
  if (cp === 0x200b) return { name: "zero-width space", severity: "high" };
  if (cp === 0x200c) return { name: "zero-width non-joiner", severity: "high" };
  if (cp === 0x200d) return { name: "zero-width joiner", severity: "high" };
  if (cp === 0x2060) return { name: "word joiner", severity: "high" };
  if (cp === 0xfeff) return { name: "zero-width no-break space", severity: "high" };
  if (cp === 0x180e) return { name: "Mongolian vowel separator", severity: "high" };
  if (cp >= 0x202a && cp <= 0x202e) return { name: "bidirectional override", severity: "high" };
  if (cp >= 0x2066 && cp <= 0x2069) return { name: "bidirectional isolate", severity: "high" };
  if (cp === 0x200e || cp === 0x200f || cp === 0x061c)
    return { name: "bidirectional mark", severity: "medium" };
  if (cp >= 0xe0000 && cp <= 0xe007f) return { name: "tag character", severity: "high" };
  if (cp >= 0xfe00 && cp <= 0xfe0f) return { name: "variation selector", severity: "high" };
  if (cp >= 0xe0100 && cp <= 0xe01ef) return { name: "variation selector", severity: "high" };
  if (cp >= 0x2061 && cp <= 0x2064) return { name: "invisible operator", severity: "high" };
  if (cp >= 0xfff9 && cp <= 0xfffb) return { name: "interlinear annotation", severity: "high" };
  if (cp >= 0x1d173 && cp <= 0x1d17a) return { name: "musical format character", severity: "high" };
  if (cp === 0x1b) return { name: "terminal escape", severity: "high" };
  if (cp === 0x00ad) return { name: "soft hyphen", severity: "medium" };
  if (cp === 0x034f) return { name: "combining grapheme joiner", severity: "medium" };
  if (cp === 0x115f || cp === 0x1160 || cp === 0x3164 || cp === 0xffa0)
    return { name: "Hangul filler", severity: "medium" };
  if (cp === 0x2800) return { name: "braille blank", severity: "medium" };
  if (cp === 0x17b4 || cp === 0x17b5) return { name: "Khmer invisible vowel", severity: "medium" };
  if ((cp < 0x20 && cp !== 0x09 && cp !== 0x0a && cp !== 0x0d && cp !== 0) || (cp >= 0x7f && cp <= 0x9f)) {
    return { name: "control character", severity: "medium" };
  }
  if (cp > 0x7f && /\p{Cf}/u.test(String.fromCodePoint(cp)))
    return { name: "format character", severity: "medium" };
  return undefined;
}

const isPictographic = (cp: number | undefined) =>
  cp !== undefined &&
  (cp === 0x20e3 ||
    /[\p{Extended_Pictographic}\p{Emoji_Modifier}\p{Regional_Indicator}]/u.test(String.fromCodePoint(cp)));
/** Scripts where a zero-width (non-)joiner is ordinary spelling. */
const isJoiningScript = (cp: number | undefined) =>
  cp !== undefined &&
  /[\p{Script=Arabic}\p{Script=Devanagari}\p{Script=Bengali}\p{Script=Gurmukhi}\p{Script=Gujarati}\p{Script=Oriya}\p{Script=Tamil}\p{Script=Telugu}\p{Script=Kannada}\p{Script=Malayalam}\p{Script=Sinhala}\p{Script=Syriac}\p{Script=Thaana}]/u.test(
    String.fromCodePoint(cp),
  );
const isHan = (cp: number | undefined) =>
  cp !== undefined && /\p{Script=Han}/u.test(String.fromCodePoint(cp));

/** True when an invisible character is ordinary where it stands (emoji, Indic or Arabic spelling, a leading BOM). */
function ordinaryInContext(cps: number[], i: number, offset: number): boolean {
  const cp = cps[i] as number;
  const prev = cps[i - 1];
  const next = cps[i + 1];
  if (cp === 0xfeff && offset === 0) return true;
  if (cp === 0x200d) {
    return (
      ((isPictographic(prev) || prev === 0xfe0f) && isPictographic(next)) ||
      (isJoiningScript(prev) && isJoiningScript(next))
    );
  }
  if (cp === 0x200c) return isJoiningScript(prev) && isJoiningScript(next);
  if (cp >= 0xfe00 && cp <= 0xfe0f) {
    return (
      prev !== undefined &&
      invisibleName(prev) === undefined &&
      !(next !== undefined && next >= 0xfe00 && next <= 0xfe0f)
    );
  }
  if (cp >= 0xe0100 && cp <= 0xe01ef) return isHan(prev);
  if (cp >= 0xe0020 && cp <= 0xe007f) {
    // Subdivision flags (🏴 followed by a few tag letters and the cancel tag) are the one legitimate use.
    let j = i;
    while (j > 0 && i - j < 8 && (cps[j - 1] as number) >= 0xe0020 && (cps[j - 1] as number) <= 0xe007e) j--;
    let k = i;
    while (k < cps.length - 1 && k - i < 8 && (cps[k] as number) !== 0xe007f) k++;
    return cps[j - 1] === 0x1f3f4 && cps[k] === 0xe007f && k - j <= 7;
  }
  return false;
}

/** The invisible-unicode rule: one hit per line, naming the characters found. */
export function scanInvisible(text: string): Hit[] {
  const cps: number[] = [];
  const offsets: number[] = [];
  for (let o = 0; o < text.length; ) {
    const cp = text.codePointAt(o) as number;
    cps.push(cp);
    offsets.push(o);
    o += cp > 0xffff ? 2 : 1;
  }
  const hits: Hit[] = [];
  for (let i = 0; i < cps.length; i++) {
    const cp = cps[i] as number;
    const kind = invisibleName(cp);
    if (!kind || ordinaryInContext(cps, i, offsets[i] as number)) continue;
    // A stray emoji presentation selector ("✔️️") is sloppy, not hidden data: it carries no bits.
    const presentation = cp === 0xfe0f || cp === 0xfe0e;
    hits.push({
      rule: "invisible-unicode",
      severity: presentation ? "medium" : kind.severity,
      index: offsets[i] as number,
      message: `${kind.name} ${codePoint(cp)}: text a reader cannot see`,
    });
  }
  hits.push(...mixedScriptWords(text));
  return hits;
}

const LATIN = /\p{Script=Latin}/u;
/** Words that mix Latin letters with Cyrillic or Greek look-alikes ("pаypal" with a Cyrillic а). */
function mixedScriptWords(text: string): Hit[] {
  const hits: Hit[] = [];
  for (const m of text.matchAll(/[\p{L}\p{M}]{2,}/gu)) {
    const word = m[0];
    if (!LATIN.test(word) || !CONFUSABLE_RE.test(word.toLowerCase())) continue;
    let latin = 0;
    for (const ch of word) if (LATIN.test(ch)) latin++;
    if (latin < 2) continue;
    hits.push({
      rule: "invisible-unicode",
      severity: "medium",
      index: m.index,
      message: `"${word}" mixes Latin letters with Cyrillic or Greek look-alikes`,
    });
  }
  return hits;
}

export const codePoint = (cp: number) => `U+${cp.toString(16).toUpperCase().padStart(4, "0")}`;

/**
 * A view of `text` for the pattern rules. "code": invisible characters dropped, compatibility forms
 * and look-alike letters folded (NFKC, Cyrillic and Greek to Latin), then read the way a shell
 * reads it (shellWords). "prose": the same folding, lowercased, Latin accents dropped ("précédentes"
 * reads "precedentes", "ß" reads "ss"), Markdown emphasis and code marks dropped.
 */
export function buildView(text: string, mode: "code" | "prose"): View {
  // The pattern rules and the flow rules read the same views of the same text: build each once.
  const cached = lastViews.text === text ? lastViews[mode] : undefined;
  if (cached) return cached;
  if (lastViews.text !== text) lastViews = { text };
  const folded = PLAIN.test(text) ? plainView(text, mode) : foldView(text, mode);
  const view = mode === "code" ? shellWords(folded) : folded;
  lastViews[mode] = view;
  return view;
}

let lastViews: { text?: string; code?: View; prose?: View } = {};
/** Printable ASCII, tabs and line breaks: nothing to fold. */
const PLAIN = /^[\t\n\r\x20-\x7e]*$/;

let IDENTITY: number[] = [];
/** 0, 1, 2, … at least `n` long; shared, so read-only (a view's origin is never written). */
function identity(n: number): readonly number[] {
  if (IDENTITY.length < n) IDENTITY = Array.from({ length: Math.max(n, IDENTITY.length * 2) }, (_, i) => i);
  return IDENTITY;
}

/** foldView for printable ASCII, without its per-character work: only continuations or markup change. */
function plainView(text: string, mode: "code" | "prose"): View {
  const source = mode === "prose" ? text.toLowerCase() : text;
  const drop = mode === "prose" ? /[*_~`]/g : /\\\n/g;
  if (!drop.test(source)) return { text: source, origin: identity(source.length) };
  drop.lastIndex = 0;
  const parts: string[] = [];
  const origin: number[] = [];
  let last = 0;
  const keep = (from: number, to: number) => {
    parts.push(source.slice(from, to));
    for (let i = from; i < to; i++) origin.push(i);
  };
  for (const m of source.matchAll(drop)) {
    keep(last, m.index);
    // A continuation between two word characters joins them; elsewhere it reads as a space.
    if (mode === "code" && !(/\w/.test(source[m.index - 1] ?? "") && /\w/.test(source[m.index + 2] ?? ""))) {
      parts.push(" ");
      origin.push(m.index);
    }
    last = m.index + m[0].length;
  }
  keep(last, source.length);
  return { text: parts.length === 1 ? source : parts.join(""), origin };
}

/** Latin letters with accents: spelled without them in the prose view. */
const ACCENTED = /[\u00c0-\u024f\u1e00-\u1eff]/u;

function foldView(text: string, mode: "code" | "prose"): View {
  const out: string[] = [];
  const origin: number[] = [];
  const push = (s: string, at: number) => {
    for (let k = 0; k < s.length; k++) {
      out.push(s[k] as string);
      origin.push(at);
    }
  };
  for (let o = 0; o < text.length; ) {
    const cp = text.codePointAt(o) as number;
    const width = cp > 0xffff ? 2 : 1;
    let ch = text.slice(o, o + width);
    if (cp !== 0x09 && cp !== 0x0a && invisibleName(cp) !== undefined) {
      o += width;
      continue;
    }
    // A shell joins a backslash-newline continuation to the next line, inside a word too ("wg\\\net");
    // between words (or after a Windows path's "C:\\") it reads as a space.
    if (mode === "code" && ch === "\\" && text[o + 1] === "\n") {
      if (!(/\w/.test(text[o - 1] ?? "") && /\w/.test(text[o + 2] ?? ""))) push(" ", o);
      o += 2;
      continue;
    }
    if (cp > 0x7f) ch = ch.normalize("NFKC");
    if (mode === "prose") {
      if (MARKUP.has(ch)) {
        o += width;
        continue;
      }
      ch = ch.toLowerCase();
      if (cp > 0x7f) {
        ch = [...ch].map((c) => CONFUSABLE[c] ?? c).join("");
        if (ch === "ß") ch = "ss";
        else if (ACCENTED.test(ch)) ch = ch.normalize("NFD").replace(/\p{M}/gu, "");
      }
    } else if (cp > 0x7f) {
      // Look-alike letters in a command ("сurl" with a Cyrillic с) read as the Latin ones; case kept.
      ch = [...ch]
        .map((c) => {
          const folded = CONFUSABLE[c.toLowerCase()];
          return folded === undefined ? c : c === c.toLowerCase() ? folded : folded.toUpperCase();
        })
        .join("");
    }
    push(ch, o);
    o += width;
  }
  return { text: out.join(""), origin };
}

/**
 * The code view read the way a shell reads words: `$IFS` / `${IFS}` are spaces, and quotes inside
 * a word are dropped (`c'u'r"l"` is curl, `b''ash` is bash). Only a quoted run of letters, digits,
 * `.`, `_`, `/` or `-` touching a word character is unquoted, so strings and arguments stay as they are.
 */
function shellWords(view: View): View {
  if (!/\$\{?IFS\b|[\w./-](['"])[\w./-]*\1|(['"])[\w./-]*\2[\w./-]/i.test(view.text)) return view;
  const out: string[] = [];
  const origin: number[] = [];
  const re = /\$\{IFS\}|\$IFS\b|(['"])([\w./-]*)\1/gi;
  let last = 0;
  const word = (c: string | undefined) => c !== undefined && /[\w./-]/.test(c);
  for (const m of view.text.matchAll(re)) {
    const at = m.index;
    let replacement: string | undefined;
    if (m[1] === undefined) replacement = " ";
    else if (word(view.text[at - 1]) || word(view.text[at + m[0].length])) replacement = m[2] as string;
    if (replacement === undefined) continue;
    for (let i = last; i < at; i++) {
      out.push(view.text[i] as string);
      origin.push(view.origin[i] as number);
    }
    const from = replacement === " " ? at : at + 1;
    for (let k = 0; k < replacement.length; k++) {
      out.push(replacement[k] as string);
      origin.push(view.origin[from + k] as number);
    }
    last = at + m[0].length;
  }
  if (last === 0) return view;
  for (let i = last; i < view.text.length; i++) {
    out.push(view.text[i] as string);
    origin.push(view.origin[i] as number);
  }
  return { text: out.join(""), origin };
}

/** The prose view with digits and symbols that stand for letters inside words read as letters ("1gn0re"). */
export function leetView(view: View): View | undefined {
  const chars = view.text.split("");
  let changed = false;
  const isLetter = (c: string | undefined) => c !== undefined && c >= "a" && c <= "z";
  for (let i = 0; i < chars.length; i++) {
    const sub = LEET[chars[i] as string];
    if (sub && (isLetter(chars[i - 1]) || isLetter(chars[i + 1]))) {
      chars[i] = sub;
      changed = true;
    }
  }
  return changed ? { text: chars.join(""), origin: view.origin } : undefined;
}

/** Offsets where each line starts; `lineOf` finds a line (1-based) by binary search. */
export function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) starts.push(i + 1);
  return starts;
}

export function lineOf(starts: readonly number[], index: number): number {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if ((starts[mid] as number) <= index) lo = mid;
    else hi = mid - 1;
  }
  return lo + 1;
}

const EXCERPT_MAX = 120;

/** Invisible and control characters as \u{…}, tabs as spaces: what a reader can see. */
export const showInvisible = (text: string): string => visibleTokens(text).join("");

/** The tokens a reader sees: characters, with invisible ones as \u{…} escapes and tabs as spaces. */
function visibleTokens(text: string): string[] {
  const tokens: string[] = [];
  for (const ch of text) {
    const cp = ch.codePointAt(0) as number;
    if (cp === 0x09) tokens.push(" ");
    else if (invisibleName(cp) !== undefined) tokens.push(`\\u{${cp.toString(16).toUpperCase()}}`);
    else tokens.push(ch);
  }
  return tokens;
}

/** How much of a long line around the offending spot is looked at (a 1 MiB line costs no more). */
const EXCERPT_WINDOW = 300;

/**
 * The line as a reader would see it, trimmed to 120 characters; a longer line is cut around
 * `column` (the offending spot), with … marking what was left out.
 */
export function excerpt(line: string, column = 0): string {
  const from = Math.max(0, column - EXCERPT_WINDOW);
  const to = Math.min(line.length, column + EXCERPT_WINDOW);
  let text = line.slice(from, to);
  let at = column - from;
  if (from === 0) {
    const lead = text.length - text.trimStart().length;
    text = text.slice(lead);
    at = Math.max(0, at - lead);
  }
  if (to === line.length) text = text.trimEnd();
  const tokens = visibleTokens(text);
  const atToken = visibleTokens(text.slice(0, at)).length;
  const width = (list: string[]) => list.reduce((n, t) => n + t.length, 0);
  if (from === 0 && to === line.length && width(tokens) <= EXCERPT_MAX) return tokens.join("");
  // Start a little before the spot; when the spot is near the end, start earlier to fill the room.
  let start = Math.max(0, atToken - 40);
  let rest = width(tokens.slice(start));
  while (start > 0 && rest + (tokens[start - 1] as string).length <= EXCERPT_MAX - 2) {
    start--;
    rest += (tokens[start] as string).length;
  }
  const head = from > 0 || start > 0 ? "…" : "";
  let body = "";
  let i = start;
  for (
    ;
    i < tokens.length && head.length + body.length + (tokens[i] as string).length <= EXCERPT_MAX - 1;
    i++
  ) {
    body += tokens[i];
  }
  return `${head}${body}${i < tokens.length || to < line.length ? "…" : ""}`;
}
