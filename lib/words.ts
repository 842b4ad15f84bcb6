/** Query words, the same for memory recall and the knowledge graph (both plugins use them). */
const STOPWORDS = new Set(
  "a an and are as at be by do does for from how i in is it me my of on or that the this to was what when where which who why with you your".split(
    " ",
  ),
);
/** At most this many query words are matched. */
export const MAX_QUERY_WORDS = 8;

/** The distinct lowercase alphanumeric words of two or more letters, stopwords dropped, in order. */
export function contentWords(text: string): string[] {
  const words = (text.toLowerCase().match(/[\p{L}\p{N}]{2,}/gu) ?? []).filter((w) => !STOPWORDS.has(w));
  return [...new Set(words)];
}

/** contentWords, at most MAX_QUERY_WORDS. */
export function queryWords(text: string): string[] {
  return contentWords(text).slice(0, MAX_QUERY_WORDS);
}

/**
 * The words as matched: lowercased, each once, no empty one (an empty string is in every text), at
 * most MAX_QUERY_WORDS; extra words are dropped, not refused. They are searched as plain substrings,
 * so no character in them is special.
 */
export function matchWords(words: readonly string[]): string[] {
  const kept = words.map((w) => w.toLowerCase()).filter((w) => w.length > 0);
  return [...new Set(kept)].slice(0, MAX_QUERY_WORDS);
}

/**
 * How many of `words` (from matchWords) occur in the texts, folded like the words (Unicode lowercase:
 * "Café" matches "café"). The texts are joined by a newline, which no word (letters and digits) can straddle.
 */
export function countMatches(words: readonly string[], ...texts: string[]): number {
  const hay = texts.join("\n").toLowerCase();
  let found = 0;
  for (const word of words) if (hay.includes(word)) found += 1;
  return found;
}
