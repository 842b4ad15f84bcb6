/**
 * `Collection.rank` on PostgreSQL, where the server must never see a word (documents are sealed):
 * each row of a collection that searches fields carries `words`, a tsvector of keyed tokens. A word
 * (sdk `wordsOf`: letter and digit runs, NFKC, lower-cased) at position i gives, at i:
 *
 * - `w` + HMAC(its light English stem), weight A: "runs", "running", "run" share one token;
 *   Latin letters lose their diacritics first ("café" is "cafe"), as on store-sqlite;
 * - `p` + HMAC(each of its first 3 … 6 characters), weight D: "tea" finds "teapot".
 *
 * An HMAC is the first 8 bytes (16 hex) of HMAC-SHA256 under the store's MAC key, for the purpose
 * "collection_rows.words <namespace>/<collection>", so equal words in two collections share no token
 * and a rekey changes every one (rekey.ts re-MACs them). A query term gives its stem token and, when
 * it has 3 to 6 characters, its prefix token; the tokens are OR-ed in a tsquery (GIN finds the rows)
 * and a row's score is, BM25-like, the sum over terms of the term's IDF among the collection's rows
 * times its ts_rank in the row (prefix matches weigh a tenth of word matches; not length-normalized:
 * the prefix tokens would count in a length).
 * The server learns which rows share a token, as it learns equal `s` slots, never what it stands for.
 *
 * The stem (`stem`), for words of ASCII letters only: a plural's "ies"→"y", "sses"→"ss", "es" after
 * s/x/z/ch/sh or "s" (not "ss"); then "ing" or "ed" (a doubled final consonant undoubled); then a
 * final "e"; never below 3 letters. "crossings", "crossing" → "cross"; "moves", "moved" → "mov".
 */
import type { Doc } from "../../sdk/index.js";
import { wordsOf } from "../../sdk/index.js";
import type { Cipher } from "./cipher.js";
import type { Scope } from "./collection-rows.js";

/** tsvector positions end at 16383 (PostgreSQL's limit): later words are not indexed. */
const MAX_POSITION = 16_383;
/** A lexeme keeps at most 256 positions in a tsvector. */
const MAX_POSITIONS = 256;
const PREFIXES = [3, 4, 5, 6] as const;
/** ts_rank's weights, {D, C, B, A}: a prefix match a tenth of a word match. */
export const RANK_WEIGHTS = "{0.1, 0.2, 0.4, 1.0}";

/** A word's light English stem; words not of Latin letters as they are. */
export function stem(word: string): string {
  if (!/^[a-z]+$/.test(word)) return word;
  let w = word;
  const cut = (suffix: string, by = "") => {
    if (!w.endsWith(suffix) || w.length - suffix.length + by.length < 3) return false;
    w = w.slice(0, w.length - suffix.length) + by;
    return true;
  };
  // The plural or third person, then -ing or -ed, then a doubled consonant or a final e.
  if (
    !cut("ies", "y") &&
    !cut("sses", "ss") &&
    !(/(s|x|z|ch|sh)es$/.test(w) && cut("es")) &&
    !w.endsWith("ss")
  )
    cut("s");
  if ((cut("ing") || cut("ed")) && /([b-df-hj-np-tv-z])\1$/.test(w) && !/(ll|ss|zz)$/.test(w))
    w = w.slice(0, -1);
  if (w.length > 3) cut("e");
  return w;
}

/** A word with the diacritics of its Latin letters removed ("café" → "cafe"), as SQLite's unicode61 does. */
export function plain(word: string): string {
  if (/^[a-z0-9]*$/.test(word)) return word;
  return word
    .normalize("NFD")
    .replace(/(\p{Script=Latin})\p{M}+/gu, "$1")
    .normalize("NFC");
}

function tokenOf(cipher: Cipher, at: Scope, kind: "w" | "p", text: string): string {
  const mac = cipher.mac(`collection_rows.words ${at.namespace}/${at.name}`, `${kind}${text}`);
  return kind + mac.subarray(0, 8).toString("hex");
}

/** The tsvector (text form) of a document's searched `fields`, or null when it searches none. */
export function wordsVector(cipher: Cipher, at: Scope, fields: readonly string[], doc: Doc): string | null {
  if (fields.length === 0) return null;
  const text = fields
    .map((f) => doc[f])
    .filter((v): v is string => typeof v === "string")
    .join("\n");
  const positions = new Map<string, number[]>();
  const add = (token: string, at: number) => {
    const list = positions.get(token) ?? [];
    if (list.length < MAX_POSITIONS && list[list.length - 1] !== at) list.push(at);
    positions.set(token, list);
  };
  const words = wordsOf(text).slice(0, MAX_POSITION);
  words.map(plain).forEach((word, i) => {
    add(tokenOf(cipher, at, "w", stem(word)), i + 1);
    const chars = Array.from(word);
    for (const n of PREFIXES)
      if (chars.length >= n) add(tokenOf(cipher, at, "p", chars.slice(0, n).join("")), i + 1);
  });
  // Tokens are [a-z0-9] only: nothing in them needs quoting. A is the word token's weight, D (unwritten) the prefixes'.
  return [...positions]
    .map(([token, at]) => `${token}:${at.map((p) => (token[0] === "w" ? `${p}A` : `${p}`)).join(",")}`)
    .join(" ");
}

/** Each term's tsquery (text form): its word token, or its prefix token. */
export function termQueries(cipher: Cipher, at: Scope, terms: readonly string[]): string[] {
  return terms.map(plain).map((term) => {
    const n = Array.from(term).length;
    const word = tokenOf(cipher, at, "w", stem(term));
    return n >= 3 && n <= 6 ? `${word} | ${tokenOf(cipher, at, "p", term)}` : word;
  });
}
