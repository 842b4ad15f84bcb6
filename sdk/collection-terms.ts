/**
 * How `Collection.rank` turns text into terms, the same for every store: runs of Unicode letters and
 * digits (with the marks that belong to them), NFKC-normalized and lower-cased. A term is only ever
 * a word to match, never an operator: stores quote or hash each one.
 */

/** The most distinct terms a rank query keeps (its first ones). */
export const MAX_RANK_TERMS = 32;
/** The longest term, in characters; a longer run is cut to it. */
export const MAX_TERM_CHARS = 64;

const WORD = /[\p{L}\p{N}][\p{L}\p{N}\p{M}]*/gu;

function cut(word: string): string {
  if (word.length <= MAX_TERM_CHARS) return word;
  return Array.from(word).slice(0, MAX_TERM_CHARS).join("");
}

/**
 * The words of `text`, in order, each at most MAX_TERM_CHARS: what a store that indexes words itself
 * (store-postgres) indexes.
 *
 * @example
 * wordsOf("Ada moved to LISBON!") // ["ada", "moved", "to", "lisbon"]
 */
export function wordsOf(text: string): string[] {
  return Array.from(text.normalize("NFKC").toLowerCase().matchAll(WORD), (m) => cut(m[0]));
}

/**
 * The terms of a rank query: its distinct words, the first MAX_RANK_TERMS of them. Stops reading
 * once it has them, so a query of any size costs little.
 *
 * @example
 * queryTerms('"NEAR(a b)" OR x* -y') // ["near", "a", "b", "or", "x", "y"]
 */
export function queryTerms(text: string): string[] {
  const terms = new Set<string>();
  for (const m of text.normalize("NFKC").toLowerCase().matchAll(WORD)) {
    terms.add(cut(m[0]));
    if (terms.size === MAX_RANK_TERMS) break;
  }
  return [...terms];
}
