import type { DecayConfig } from "../../sdk/index.js";
import { decayedScore, queryWords } from "../../sdk/kits/text.js";
import type { Memories, MemoryMatch } from "./memories.js";

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
  memory: Pick<Memories, "candidates" | "rescore">,
  fighterId: string,
  query: string,
  limit: number,
  decay: DecayConfig,
  now = Date.now(),
): Promise<RecalledMemory[]> {
  const words = queryWords(query);
  const ranked = (await memory.candidates(fighterId, words))
    .map((m: MemoryMatch) => ({
      memory: m,
      score: decayedScore(m.score0, m.scored_at, now, decay.rate_per_day),
    }))
    .filter((r) => r.score >= decay.forget_below)
    .sort((a, b) => Math.max(1, b.memory.matches) * b.score - Math.max(1, a.memory.matches) * a.score)
    .slice(0, limit);
  const at = new Date(now).toISOString();
  await memory.rescore(
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
