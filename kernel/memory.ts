import type { MemoryMatch, Store } from "./store-types.js";

export interface DecayConfig {
  rate_per_day: number;
  reinforce_on_access: number;
  forget_below: number;
}

const DAY_MS = 86_400_000;
const STOPWORDS = new Set(
  "a an and are as at be by do does for from how i in is it me my of on or that the this to was what when where which who why with you your".split(
    " ",
  ),
);
/** At most this many query words are matched (the store caches one statement per word count). */
export const MAX_QUERY_WORDS = 8;

/** Lowercase alphanumeric words of two or more letters, stopwords dropped, at most MAX_QUERY_WORDS. */
export function queryWords(text: string): string[] {
  const words = (text.toLowerCase().match(/[\p{L}\p{N}]{2,}/gu) ?? []).filter((w) => !STOPWORDS.has(w));
  return [...new Set(words)].slice(0, MAX_QUERY_WORDS);
}

/** score(t) = score0 · e^(−rate · t), t in days since the score was set. */
export function decayedScore(score0: number, scoredAt: string, now: number, ratePerDay: number): number {
  const days = Math.max(0, (now - Date.parse(scoredAt)) / DAY_MS);
  return score0 * Math.exp(-ratePerDay * days);
}

export interface RecalledMemory {
  key: string;
  value: string;
  score: number;
  created_at: string;
}

/**
 * Recall: memories that contain the query's words, ranked by words matched × current relevance,
 * those decayed below `forget_below` left out. Each recalled memory is reinforced: its score rises by
 * `reinforce_on_access` and its decay starts again from now.
 */
export async function recallMemories(
  store: Store,
  fighterId: string,
  query: string,
  limit: number,
  decay: DecayConfig,
  now = Date.now(),
): Promise<RecalledMemory[]> {
  const words = queryWords(query);
  const ranked = (await store.memories.candidates(fighterId, words))
    .map((m: MemoryMatch) => ({
      memory: m,
      score: decayedScore(m.score0, m.scored_at, now, decay.rate_per_day),
    }))
    .filter((r) => r.score >= decay.forget_below)
    .sort((a, b) => Math.max(1, b.memory.matches) * b.score - Math.max(1, a.memory.matches) * a.score)
    .slice(0, limit);
  const at = new Date(now).toISOString();
  await store.memories.rescore(
    ranked.map((r) => ({ id: r.memory.id, score0: r.score + decay.reinforce_on_access })),
    at,
  );
  return ranked.map((r) => ({
    key: r.memory.key,
    value: r.memory.value,
    score: Number((r.score + decay.reinforce_on_access).toFixed(4)),
    created_at: r.memory.created_at,
  }));
}
