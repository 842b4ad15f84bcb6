// The recall Spar had before issue 33, frozen here so the benchmark keeps comparing against it after
// plugins/moves-memory changes: memories whose key or value contain the query's content words (as
// plain substrings), ranked by words matched × the decayed score, those decayed below forget_below
// left out, each recalled memory reinforced. A port of main's plugins/moves-memory/recall.ts,
// memories.ts (candidates) and lib/words.ts, over an in-memory list instead of a collection. It
// searches stored memories only: there was no search over past messages.

const STOPWORDS = new Set(
  "a an and are as at be by do does for from how i in is it me my of on or that the this to was what when where which who why with you your".split(
    " ",
  ),
);
const MAX_QUERY_WORDS = 8;
const MAX_CANDIDATES = 1000;
const DAY_MS = 86_400_000;

/** The defaults of `[memory.decay]`. */
export const DECAY = Object.freeze({ rate_per_day: 0.05, reinforce_on_access: 0.2, forget_below: 0.05 });

function queryWords(text) {
  const words = (text.toLowerCase().match(/[\p{L}\p{N}]{2,}/gu) ?? []).filter((w) => !STOPWORDS.has(w));
  return [...new Set(words)].slice(0, MAX_QUERY_WORDS);
}

function countMatches(words, ...texts) {
  const hay = texts.join("\n").toLowerCase();
  let found = 0;
  for (const word of words) if (hay.includes(word)) found += 1;
  return found;
}

function decayedScore(score0, scoredAt, now, ratePerDay) {
  const days = Math.max(0, (now - Date.parse(scoredAt)) / DAY_MS);
  return score0 * Math.exp(-ratePerDay * days);
}

/**
 * The old recall over one fighter's memories, in the lab's shape; `now()` is the bench's clock (ms).
 * Messages and compactions are ignored: the old memory saw only what the model stored itself.
 */
export function createWordsOld({ now, decay = DECAY }) {
  /** key → { key, value, score0, scored_at, created_at } in write order (most recent last). */
  const memories = new Map();
  return {
    async storeMemory(key, value) {
      const at = new Date(now()).toISOString();
      const found = memories.get(key);
      memories.delete(key);
      memories.set(
        key,
        found
          ? { ...found, value, score0: 1, scored_at: at }
          : { key, value, score0: 1, scored_at: at, created_at: at },
      );
    },
    async addMessage() {},
    async compact() {},
    async recall(query, k) {
      const words = queryWords(query);
      const clock = now();
      // candidates(): most recently scored first, those holding any word, most words first (stable).
      const rows = [...memories.values()].sort((a, b) => Date.parse(b.scored_at) - Date.parse(a.scored_at));
      const matched = [];
      for (const row of rows) {
        const matches = words.length === 0 ? 0 : countMatches(words, row.key, row.value);
        if (words.length === 0 || matches > 0) matched.push({ row, matches });
      }
      matched.sort((a, b) => b.matches - a.matches);
      const ranked = matched
        .slice(0, MAX_CANDIDATES)
        .map((m) => ({ ...m, score: decayedScore(m.row.score0, m.row.scored_at, clock, decay.rate_per_day) }))
        .filter((r) => r.score >= decay.forget_below)
        .sort((a, b) => Math.max(1, b.matches) * b.score - Math.max(1, a.matches) * a.score)
        .slice(0, k);
      const at = new Date(clock).toISOString();
      for (const r of ranked) {
        memories.set(r.row.key, { ...r.row, score0: r.score + decay.reinforce_on_access, scored_at: at });
      }
      return ranked.map((r) => `${r.row.key}: ${r.row.value}`);
    },
  };
}
