/**
 * Counting query words in text, for memory candidates and knowledge queries. PostgreSQL only holds
 * ciphertext, so the matching the SQLite store does in SQL happens here, after decryption, over a
 * bounded number of each fighter's newest rows.
 */

/** The kernel asks with at most 8 words; extra words are dropped, not refused (as store-sqlite). */
export const MAX_MATCH_WORDS = 8;

/**
 * The words as matched: lowercased, each once, no empty one (an empty string is in every text), at
 * most MAX_MATCH_WORDS. They are searched as plain substrings, so no character in them is special.
 */
export function matchWords(words: readonly string[]): string[] {
  const kept = words.map((w) => w.toLowerCase()).filter((w) => w.length > 0);
  return [...new Set(kept)].slice(0, MAX_MATCH_WORDS);
}

/**
 * How many of `words` occur in the texts, folded like the words (Unicode lowercase: "Café" matches
 * "café"). The texts are joined by a newline, which no word (letters and digits) can straddle.
 */
export function countMatches(words: readonly string[], ...texts: string[]): number {
  const hay = texts.join("\n").toLowerCase();
  let found = 0;
  for (const word of words) if (hay.includes(word)) found += 1;
  return found;
}
