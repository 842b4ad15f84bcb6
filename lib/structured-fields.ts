/**
 * Structured fields (RFC 8941): the subset HTTP message signatures and Content-Digest use. Stricter
 * than the RFC in two ways, on purpose: duplicate dictionary keys and parameters are errors (the
 * RFC's "last one wins" lets a proxy-added duplicate silently change what is verified), and decimals
 * are refused (no signature parameter uses them).
 */
import { SparError } from "../sdk/errors.js";

export type BareItem =
  | { type: "string"; value: string }
  | { type: "token"; value: string }
  | { type: "integer"; value: number }
  | { type: "boolean"; value: boolean }
  | { type: "bytes"; value: Buffer };
export type Params = [string, BareItem][];
export interface Item {
  kind: "item";
  value: BareItem;
  params: Params;
}
export interface InnerList {
  kind: "list";
  items: Item[];
  params: Params;
}
export type Member = Item | InnerList;

export class SfError extends Error {}

const KEY_START = /[a-z*]/;
const KEY_CHAR = /[a-z0-9_\-.*]/;
const TOKEN_CHAR = /[!#$%&'*+\-.^_`|~0-9A-Za-z:/]/;
const BASE64_CHAR = /[A-Za-z0-9+/=]/;

export class SfParser {
  private pos = 0;
  constructor(private readonly text: string) {}

  dictionary(): Map<string, Member> {
    const members = new Map<string, Member>();
    this.skip(" \t");
    while (this.pos < this.text.length) {
      const key = this.key();
      if (members.has(key)) throw new SfError(`duplicate key "${key}"`);
      if (this.peek() === "=") {
        this.pos++;
        members.set(key, this.peek() === "(" ? this.innerList() : this.item());
      } else {
        members.set(key, { kind: "item", value: { type: "boolean", value: true }, params: this.params() });
      }
      this.skip(" \t");
      if (this.pos >= this.text.length) return members;
      if (this.text[this.pos++] !== ",") throw new SfError(`expected "," at offset ${this.pos - 1}`);
      this.skip(" \t");
      if (this.pos >= this.text.length) throw new SfError("trailing comma");
    }
    return members;
  }

  private innerList(): InnerList {
    this.pos++;
    const items: Item[] = [];
    for (;;) {
      this.skip(" ");
      if (this.peek() === ")") {
        this.pos++;
        return { kind: "list", items, params: this.params() };
      }
      items.push(this.item());
      const next = this.peek();
      if (next !== " " && next !== ")") throw new SfError(`expected " " or ")" at offset ${this.pos}`);
    }
  }

  private item(): Item {
    return { kind: "item", value: this.bareItem(), params: this.params() };
  }

  private params(): Params {
    const params: Params = [];
    while (this.peek() === ";") {
      this.pos++;
      this.skip(" ");
      const key = this.key();
      if (params.some(([k]) => k === key)) throw new SfError(`duplicate parameter "${key}"`);
      let value: BareItem = { type: "boolean", value: true };
      if (this.peek() === "=") {
        this.pos++;
        value = this.bareItem();
      }
      params.push([key, value]);
    }
    return params;
  }

  private key(): string {
    const start = this.pos;
    if (!KEY_START.test(this.peek())) throw new SfError(`expected a key at offset ${start}`);
    while (KEY_CHAR.test(this.peek())) this.pos++;
    return this.text.slice(start, this.pos);
  }

  private bareItem(): BareItem {
    const c = this.peek();
    if (c === "-" || (c >= "0" && c <= "9")) return this.integer();
    if (c === '"') return this.string();
    if (c === ":") return this.bytes();
    if (c === "?") return this.boolean();
    if (c === "*" || /[A-Za-z]/.test(c)) return this.token();
    throw new SfError(`unexpected ${c === "" ? "end of input" : `"${c}"`} at offset ${this.pos}`);
  }

  private integer(): BareItem {
    const match = /^-?[0-9]{1,15}/.exec(this.text.slice(this.pos, this.pos + 17));
    if (!match) throw new SfError(`bad integer at offset ${this.pos}`);
    this.pos += match[0].length;
    if (this.peek() === ".") throw new SfError(`decimals are not supported (offset ${this.pos})`);
    if (/[0-9]/.test(this.peek())) throw new SfError("integer longer than 15 digits");
    return { type: "integer", value: Number(match[0]) };
  }

  private string(): BareItem {
    let out = "";
    for (this.pos++; this.pos < this.text.length; this.pos++) {
      const c = this.text[this.pos] as string;
      if (c === '"') {
        this.pos++;
        return { type: "string", value: out };
      }
      if (c === "\\") {
        const escaped = this.text[++this.pos];
        if (escaped !== '"' && escaped !== "\\") throw new SfError(`bad escape at offset ${this.pos}`);
        out += escaped;
      } else if (c < " " || c > "~") {
        throw new SfError(`non-printable character in string at offset ${this.pos}`);
      } else {
        out += c;
      }
    }
    throw new SfError("unterminated string");
  }

  private token(): BareItem {
    const start = this.pos++;
    while (TOKEN_CHAR.test(this.peek())) this.pos++;
    return { type: "token", value: this.text.slice(start, this.pos) };
  }

  private bytes(): BareItem {
    const start = ++this.pos;
    while (BASE64_CHAR.test(this.peek())) this.pos++;
    if (this.peek() !== ":") throw new SfError(`unterminated byte sequence at offset ${start - 1}`);
    const encoded = this.text.slice(start, this.pos++);
    return { type: "bytes", value: Buffer.from(encoded, "base64") };
  }

  private boolean(): BareItem {
    const c = this.text[this.pos + 1];
    if (c !== "0" && c !== "1") throw new SfError(`bad boolean at offset ${this.pos}`);
    this.pos += 2;
    return { type: "boolean", value: c === "1" };
  }

  private peek(): string {
    return this.text[this.pos] ?? "";
  }

  private skip(chars: string): void {
    while (this.pos < this.text.length && chars.includes(this.text[this.pos] as string)) this.pos++;
  }
}

export function serializeString(value: string): string {
  if (!/^[\x20-\x7e]*$/.test(value)) {
    throw new SparError(
      "VALIDATION_FAILED",
      `not a structured-field string (printable ASCII only): ${value}`,
    );
  }
  return `"${value.replace(/[\\"]/g, "\\$&")}"`;
}

export function serializeBareItem(item: BareItem): string {
  switch (item.type) {
    case "string":
      return serializeString(item.value);
    case "token":
      return item.value;
    case "integer":
      return String(item.value);
    case "boolean":
      return item.value ? "?1" : "?0";
    case "bytes":
      return `:${item.value.toString("base64")}:`;
  }
}

export function serializeParams(params: Params): string {
  return params
    .map(([key, value]) =>
      value.type === "boolean" && value.value ? `;${key}` : `;${key}=${serializeBareItem(value)}`,
    )
    .join("");
}
