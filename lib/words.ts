/** Query words, the same for memory recall and the knowledge graph (both plugins use them). */
const STOPWORDS = new Set(
  "a an and are as at be by do does for from how i in is it me my of on or that the this to was what when where which who why with you your".split(
    " ",
  ),
);
/** At most this many query words are matched (the store caches one statement per word count). */
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
