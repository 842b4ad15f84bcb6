/**
 * `spar/sdk/text`: words and relevance, the same for every plugin that searches what fighters
 * keep: the content words of a query (stopwords dropped), matching them as plain substrings, and the
 * exponential decay of a score with time (`[memory.decay]`). Memory recall, the knowledge graph and
 * the Creed's observations use these, so a query means the same in each.
 *
 * @example
 * import { countMatches, matchWords, queryWords } from "spar/sdk/text";
 * const words = matchWords(queryWords("where did I park the car?")); // ["park", "car"]
 */
export { decayedScore } from "../../lib/decay.js";
export { contentWords, countMatches, MAX_QUERY_WORDS, matchWords, queryWords } from "../../lib/words.js";
