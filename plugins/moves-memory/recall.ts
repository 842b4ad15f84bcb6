import type { DecayConfig, TaintSource } from "../../sdk/index.js";
import type { Embeddings } from "../../sdk/kits/recall.js";
import { closeness, fuse, pick } from "../../sdk/kits/recall.js";
import { decayedScore } from "../../sdk/kits/text.js";
import { candidatesFor, type Memories, type MemoryRecord } from "./memories.js";

export interface RecalledMemory {
  key: string;
  value: string;
  score: number;
  created_at: string;
}

/** How a recall found what it returns: `words`, or `words+meaning` when the embeddings answered. */
export type RecallBy = "words" | "words+meaning";

export interface Recall {
  memories: RecalledMemory[];
  /** Each memory's fused score (rank fusion × relevance), as `memories` is ordered: not shown to the model. */
  weights: number[];
  by: RecallBy;
  /** The untrusted sources of what it returns (memories a tainted turn stored). */
  taint: TaintSource[];
  /**
   * The reinforcement's write, left running: the answer does not wait for the disk, and a
   * reinforcement lost to a crash costs nothing but a little relevance.
   */
  reinforced: Promise<void>;
}

/**
 * Recall: the fighter's memories matching the query by words (the store's full-text index, BM25)
 * and, with an embedding model, by meaning; the two rankings fused (RRF), each multiplied by its
 * current relevance, those decayed below `forget_below` left out, then picked for diversity (MMR).
 * Each recalled memory is reinforced: its score rises by `reinforce_on_access` and its decay starts
 * again from now.
 */
export async function recallMemories(
  memory: Pick<Memories, "byWords" | "byIds" | "rescore">,
  embeddings: Pick<Embeddings, "search" | "vectorOf" | "floor"> | undefined,
  fighterId: string,
  query: string,
  limit: number,
  decay: DecayConfig,
  now = Date.now(),
): Promise<Recall> {
  const count = candidatesFor(limit);
  const floor = embeddings?.floor ?? 0;
  const [words, meaning] = await Promise.all([
    memory.byWords(fighterId, query, count),
    embeddings?.search("memory", fighterId, query, count),
  ]);
  const known = new Map(words.map((m) => [m.id, m]));
  const missing = (meaning ?? []).map((h) => h.id).filter((id) => !known.has(id));
  for (const m of await memory.byIds(fighterId, missing)) known.set(m.id, m);
  const near = (meaning ?? []).filter((h) => known.has(h.id));
  const fused = fuse([
    { ids: words.map((m) => m.id) },
    { ids: near.map((h) => h.id), weights: near.map((h) => closeness(h.score, floor)) },
  ]);
  const ranked = [...fused]
    .map(([id, rrf]) => {
      const m = known.get(id) as MemoryRecord;
      const relevance = decayedScore(m.score0, m.scored_at, now, decay.rate_per_day);
      return { memory: m, relevance, score: rrf * relevance };
    })
    .filter((r) => r.relevance >= decay.forget_below);
  const picked = pick(ranked, limit, {
    score: (r) => r.score,
    id: (r) => r.memory.id,
    vector: (id) => embeddings?.vectorOf("memory", fighterId, id),
    text: (r) => text(r.memory),
    writtenAt: (r) => r.memory.written_at ?? r.memory.created_at,
  });
  const at = new Date(now).toISOString();
  const reinforced = memory.rescore(
    picked.map((r) => ({ id: r.memory.id, score0: r.relevance + decay.reinforce_on_access })),
    at,
  );
  const taint: TaintSource[] = [];
  for (const r of picked) if (r.memory.taint) taint.push(r.memory.taint);
  return {
    memories: picked.map((r) => ({
      key: r.memory.key,
      value: r.memory.value,
      score: Number((r.relevance + decay.reinforce_on_access).toFixed(4)),
      created_at: r.memory.created_at,
    })),
    weights: picked.map((r) => r.score),
    by: meaning ? "words+meaning" : "words",
    taint,
    reinforced,
  };
}

const text = (m: MemoryRecord) => `${m.key} ${m.value}`;
