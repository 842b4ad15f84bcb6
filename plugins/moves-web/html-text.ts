/**
 * Readable text from an HTML page, for a model to read: headings as `#` lines, paragraphs and list
 * items on their own lines, links as `[text](absolute url)`, table cells joined by ` | `; scripts,
 * styles, navigation, forms' widgets, embedded documents and hidden elements left out; character
 * references decoded; whitespace collapsed except in `<pre>`. One linear pass over the markup (no
 * regular expression that can backtrack over the whole page), so a hostile page costs what its size
 * costs.
 */
import { decodeEntities } from "./entities.js";

export interface PageText {
  title?: string;
  text: string;
}

// Elements whose whole content is left out.
const SKIPPED = new Set([
  "script",
  "style",
  "noscript",
  "template",
  "svg",
  "math",
  "nav",
  "iframe",
  "object",
  "canvas",
  "select",
  "textarea",
  "button",
  "audio",
  "video",
]);
// Elements whose content is raw text: the next `</name` ends them, whatever sits between.
const RAW_TEXT = new Set([
  "script",
  "style",
  "textarea",
  "title",
  "xmp",
  "iframe",
  "noembed",
  "noframes",
  "noscript",
  "plaintext",
]);
const VOID = new Set([
  "area",
  "base",
  "br",
  "col",
  "embed",
  "hr",
  "img",
  "input",
  "keygen",
  "link",
  "meta",
  "param",
  "source",
  "track",
  "wbr",
]);
// Blocks: a line break before and after; paragraph-like ones a blank line.
const LINE_BLOCKS = new Set([
  "address",
  "article",
  "aside",
  "body",
  "caption",
  "center",
  "dd",
  "details",
  "dialog",
  "div",
  "dl",
  "dt",
  "fieldset",
  "figcaption",
  "figure",
  "footer",
  "form",
  "header",
  "hgroup",
  "legend",
  "main",
  "menu",
  "ol",
  "section",
  "summary",
  "tr",
  "ul",
]);
const PARAGRAPH_BLOCKS = new Set(["blockquote", "hr", "p", "pre", "table"]);

interface Tag {
  name: string;
  attrs: Map<string, string>;
  selfClosing: boolean;
}

const ATTRIBUTE = /([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+)))?/g;

function parseTag(body: string): Tag {
  const nameEnd = body.search(/[\s/]|$/);
  const name = body.slice(0, nameEnd).toLowerCase();
  const attrs = new Map<string, string>();
  const rest = body.slice(nameEnd);
  for (const m of rest.matchAll(ATTRIBUTE)) {
    const key = (m[1] as string).toLowerCase();
    if (!attrs.has(key)) attrs.set(key, decodeEntities(m[2] ?? m[3] ?? m[4] ?? ""));
  }
  return { name, attrs, selfClosing: /\/\s*$/.test(rest) };
}

// Elements whose end tag may be left out: skipping one marked hidden could swallow the page after it.
const OPTIONAL_END = new Set([
  "p",
  "li",
  "dt",
  "dd",
  "tr",
  "td",
  "th",
  "tbody",
  "thead",
  "tfoot",
  "option",
  "body",
  "html",
]);

/** Hidden from readers (`hidden`, `aria-hidden`, an inline `display: none`), or navigation. */
function isHidden(tag: Tag): boolean {
  if (OPTIONAL_END.has(tag.name)) return false;
  return (
    tag.attrs.has("hidden") ||
    tag.attrs.get("aria-hidden")?.toLowerCase() === "true" ||
    tag.attrs.get("role")?.toLowerCase() === "navigation" ||
    /(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*hidden)/i.test(tag.attrs.get("style") ?? "")
  );
}

/** The text written so far, and what the next piece of text must be preceded by. */
class Writer {
  private readonly parts: string[] = [];
  private breaks = 0;
  private space = false;
  private separator = "";
  private lineStart = true;
  prefix = "";
  /** How many pieces of text have been written: a link with none gets no brackets. */
  written = 0;

  block(lines: number): void {
    this.breaks = Math.max(this.breaks, lines);
  }

  lineBreak(): void {
    if (this.written === 0) return;
    this.parts.push("\n");
    this.lineStart = true;
    this.space = false;
  }

  cell(): void {
    this.separator = " | ";
  }

  text(raw: string, pre: boolean): void {
    if (pre) {
      if (raw !== "") this.emit(raw);
      return;
    }
    let s = raw.replace(/[\t\n\f\r \u00a0]+/g, " ");
    if (s.startsWith(" ")) {
      this.space = true;
      s = s.slice(1);
    }
    if (s === "") return;
    const trailing = s.endsWith(" ");
    this.emit(trailing ? s.slice(0, -1) : s);
    this.space = trailing;
  }

  /** Text glued to what came before (a link's closing `](url)`). */
  append(s: string): void {
    this.parts.push(s);
  }

  private emit(s: string): void {
    if (this.written > 0) {
      if (this.breaks > 0) this.parts.push("\n".repeat(this.breaks));
      else if (!this.lineStart && this.separator) this.parts.push(this.separator);
      else if (!this.lineStart && this.space) this.parts.push(" ");
    }
    this.parts.push(this.prefix + s);
    this.breaks = 0;
    this.space = false;
    this.separator = "";
    this.prefix = "";
    this.lineStart = s.endsWith("\n");
    this.written += 1;
  }

  result(): string {
    return this.parts
      .join("")
      .replace(/[ \t]+\n/g, "\n")
      .replace(/\n{3,}/g, "\n\n")
      .trim();
  }
}

/** A link target worth showing: absolute http(s), never `javascript:`, `data:` or a same-page `#`. */
function linkTarget(href: string | undefined, base: URL | undefined): string | undefined {
  const h = href?.trim();
  if (!h || h.startsWith("#")) return undefined;
  const url = URL.parse(h, base?.href);
  if (!url) return undefined;
  return url.protocol === "http:" || url.protocol === "https:" ? url.href : undefined;
}

function collapse(text: string): string {
  return decodeEntities(text)
    .replace(/[\t\n\f\r \u00a0]+/g, " ")
    .trim();
}

/**
 * Converts a page to readable text. `baseUrl` (the page's own URL) makes relative links absolute;
 * a `<base href>` in the page overrides it.
 */
export function htmlToText(html: string, baseUrl?: string): PageText {
  const out = new Writer();
  let base = baseUrl === undefined ? undefined : (URL.parse(baseUrl) ?? undefined);
  let title: string | undefined;
  let skip: { name: string; depth: number } | undefined;
  let preDepth = 0;
  let link: { href: string; written: number } | undefined;
  const lists: { ordered: boolean; count: number }[] = [];
  let cellsInRow = 0;

  const closeLink = () => {
    if (!link) return;
    if (out.written === link.written) out.prefix = out.prefix.replace(/\[$/, "");
    else out.append(`](${link.href})`);
    link = undefined;
  };

  const startTag = (tag: Tag) => {
    const { name } = tag;
    if (skip) {
      if (name === skip.name && !tag.selfClosing && !VOID.has(name)) skip.depth += 1;
      return;
    }
    if (name === "base") base = URL.parse(tag.attrs.get("href") ?? "", base?.href) ?? base;
    if ((SKIPPED.has(name) || isHidden(tag)) && !VOID.has(name)) {
      if (!tag.selfClosing) skip = { name, depth: 1 };
      return;
    }
    if (LINE_BLOCKS.has(name)) out.block(1);
    if (PARAGRAPH_BLOCKS.has(name)) out.block(2);
    if (name === "pre") preDepth += 1;
    else if (name === "br") out.lineBreak();
    else if (name === "ul" || name === "ol") lists.push({ ordered: name === "ol", count: 0 });
    else if (name === "li") {
      out.block(1);
      const list = lists.at(-1);
      const indent = "  ".repeat(Math.max(0, lists.length - 1));
      if (list?.ordered) list.count += 1;
      out.prefix = `${indent}${list?.ordered ? `${list.count}.` : "-"} `;
    } else if (/^h[1-6]$/.test(name)) {
      out.block(2);
      out.prefix = `${"#".repeat(Number(name[1]))} `;
    } else if (name === "tr") cellsInRow = 0;
    else if (name === "td" || name === "th") {
      if (cellsInRow > 0) out.cell();
      cellsInRow += 1;
    } else if (name === "a") {
      closeLink();
      const href = linkTarget(tag.attrs.get("href"), base);
      if (href) {
        link = { href, written: out.written };
        out.prefix += "[";
      }
    }
  };

  const endTag = (name: string) => {
    if (skip) {
      if (name === skip.name) skip.depth -= 1;
      if (skip.depth === 0) skip = undefined;
      return;
    }
    if (name === "a") closeLink();
    else if (name === "pre") preDepth = Math.max(0, preDepth - 1);
    else if ((name === "ul" || name === "ol") && lists.length > 0) lists.pop();
    if (LINE_BLOCKS.has(name) || name === "li") out.block(1);
    if (PARAGRAPH_BLOCKS.has(name) || /^h[1-6]$/.test(name)) out.block(2);
  };

  const text = (raw: string) => {
    if (skip || raw === "") return;
    out.text(decodeEntities(preDepth > 0 ? raw.replace(/\r\n?/g, "\n") : raw), preDepth > 0);
  };

  const n = html.length;
  let i = 0;
  while (i < n) {
    const lt = html.indexOf("<", i);
    if (lt < 0) {
      text(html.slice(i));
      break;
    }
    if (lt > i) text(html.slice(i, lt));
    i = lt;
    if (html.startsWith("<!--", i)) {
      const end = html.indexOf("-->", i + 4);
      i = end < 0 ? n : end + 3;
      continue;
    }
    const next = html.charCodeAt(i + 1);
    if (next === 33 /* ! */ || next === 63 /* ? */) {
      const end = html.indexOf(">", i);
      i = end < 0 ? n : end + 1;
      continue;
    }
    const closing = next === 47; /* / */
    const first = html.charCodeAt(i + (closing ? 2 : 1));
    const isLetter = (first >= 65 && first <= 90) || (first >= 97 && first <= 122);
    if (!isLetter) {
      if (closing) {
        const end = html.indexOf(">", i);
        i = end < 0 ? n : end + 1;
      } else {
        text("<");
        i += 1;
      }
      continue;
    }
    const end = tagEnd(html, i + 1);
    if (end < 0) break; // a tag cut off by the end of the page says nothing
    const body = html.slice(i + (closing ? 2 : 1), end);
    i = end + 1;
    if (closing) {
      endTag(parseTag(body).name);
      continue;
    }
    const tag = parseTag(body);
    startTag(tag);
    if (RAW_TEXT.has(tag.name) && !tag.selfClosing) {
      const close = rawTextEnd(html, i, tag.name);
      const content = html.slice(i, close.start);
      if (tag.name === "title" && title === undefined && !skip) title = collapse(content);
      else if (tag.name === "plaintext") text(content);
      i = close.after;
      endTag(tag.name);
    }
  }
  closeLink();
  const result = out.result();
  return title ? { title: title.slice(0, 500), text: result } : { text: result };
}

/** The `>` that ends a tag opened at `from`, with quoted attribute values skipped; -1 when none. */
function tagEnd(html: string, from: number): number {
  let quote = 0;
  let afterEquals = false;
  for (let j = from; j < html.length; j++) {
    const c = html.charCodeAt(j);
    if (quote) {
      if (c === quote) quote = 0;
      continue;
    }
    if (c === 62 /* > */) return j;
    if ((c === 34 || c === 39) && afterEquals) {
      quote = c;
      afterEquals = false;
    } else if (c === 61 /* = */) afterEquals = true;
    else if (c !== 32 && c !== 9 && c !== 10 && c !== 12 && c !== 13) afterEquals = false;
  }
  return -1;
}

/** Where a raw-text element's content ends (`</name` followed by a space, `/` or `>`), and after it. */
function rawTextEnd(html: string, from: number, name: string): { start: number; after: number } {
  if (name === "plaintext") return { start: html.length, after: html.length };
  const pattern = new RegExp(`</${name}(?=[\\s/>])`, "gi");
  pattern.lastIndex = from;
  const match = pattern.exec(html);
  if (!match) return { start: html.length, after: html.length };
  const close = html.indexOf(">", match.index);
  return { start: match.index, after: close < 0 ? html.length : close + 1 };
}
