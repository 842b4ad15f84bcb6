/**
 * Putting the two searches together: reciprocal rank fusion of the word and meaning rankings, then a
 * diverse pick (maximal marginal relevance) so five near-copies of one fact do not fill the answer.
 */
import { cosine } from "./vector-index.js";

/** The usual constant of reciprocal rank fusion: a rank's weight is 1 / (K + rank). */
export const RRF_K = 60;
/** Relevance against novelty in the pick: 1 is relevance alone. */
export const MMR_LAMBDA = 0.7;

/** A ranking, best first; `weights` (0 … 1, by position) scale each rank's share when given. */
export interface Ranking {
  ids: readonly string[];
  weights?: readonly number[];
}

/**
 * Each id's fused score: the sum over the rankings it is in of weight / (RRF_K + its rank), rank 1
 * first, weight 1 unless the ranking gives one.
 *
 * @example
 * fuse([{ ids: ["a", "b"] }, { ids: ["b", "c"] }]); // b first: it is in both
 */
export function fuse(rankings: readonly Ranking[]): Map<string, number> {
  const scores = new Map<string, number>();
  for (const { ids, weights } of rankings) {
    ids.forEach((id, i) => {
      const weight = weights?.[i] ?? 1;
      if (weight > 0) scores.set(id, (scores.get(id) ?? 0) + weight / (RRF_K + i + 1));
    });
  }
  return scores;
}

/**
 * How much a meaning match counts: its cosine similarity above `floor` (what unrelated texts score
 * with a typical embedding model), scaled to 0 … 1. A nearest neighbour that is not near counts nothing.
 */
export function closeness(cosine: number, floor: number): number {
  return Math.min(1, Math.max(0, (cosine - floor) / (1 - floor)));
}

/**
 * Up to `k` of `candidates` (best first by `score`), each next one the best of
 * `MMR_LAMBDA · relevance − (1 − MMR_LAMBDA) · its highest similarity to those already picked`, with
 * relevance scaled to the best candidate's, so the trade-off does not depend on the scores' units.
 */
export function diverse<T>(
  candidates: readonly T[],
  k: number,
  score: (item: T) => number,
  similarity: (a: T, b: T) => number,
): T[] {
  const pool = [...candidates].sort((a, b) => score(b) - score(a));
  const top = pool.length > 0 ? score(pool[0] as T) : 0;
  const picked: T[] = [];
  while (picked.length < k && pool.length > 0) {
    let best = 0;
    let bestValue = Number.NEGATIVE_INFINITY;
    pool.forEach((item, i) => {
      const relevance = top > 0 ? score(item) / top : 0;
      const redundancy = picked.reduce((m, p) => Math.max(m, similarity(item, p)), 0);
      const value = MMR_LAMBDA * relevance - (1 - MMR_LAMBDA) * redundancy;
      if (value > bestValue) {
        bestValue = value;
        best = i;
      }
    });
    picked.push(pool.splice(best, 1)[0] as T);
  }
  return picked;
}

/** Word-set overlap (Jaccard) of two texts: the similarity used when a result has no vector. */
export function wordOverlap(a: string, b: string): number {
  const words = (text: string) => new Set(text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []);
  const x = words(a);
  const y = words(b);
  if (x.size === 0 || y.size === 0) return 0;
  let shared = 0;
  for (const w of x) if (y.has(w)) shared += 1;
  return shared / (x.size + y.size - shared);
}

/** Two results this similar are about the same thing: the newer one goes first (an update wins). */
export const SAME_SUBJECT = 0.8;

/**
 * `picked` (best first) with every result moved ahead of the older results it is about the same
 * thing as (`similarity` ≥ SAME_SUBJECT), so an updated fact never ranks below the one it replaced.
 */
export function newestFirst<T>(
  picked: readonly T[],
  writtenAt: (item: T) => string,
  similarity: (a: T, b: T) => number,
): T[] {
  const out = [...picked];
  for (let j = 1; j < out.length; j++) {
    const item = out[j] as T;
    const at = out.findIndex(
      (other, i) => i < j && writtenAt(other) < writtenAt(item) && similarity(item, other) >= SAME_SUBJECT,
    );
    if (at >= 0) {
      out.splice(j, 1);
      out.splice(at, 0, item);
    }
  }
  return out;
}

/** How `pick` reads a candidate: its score, id, vector (when embedded), text and when it was written. */
export interface PickOptions<T> {
  score: (item: T) => number;
  id: (item: T) => string;
  vector: (id: string) => Float32Array | undefined;
  text: (item: T) => string;
  writtenAt: (item: T) => string;
}

/**
 * Up to `k` of `candidates` for an answer: picked for diversity (`diverse`), similarity the cosine
 * of their vectors (each looked up once) or, without them, their words in common; then, of two
 * about the same thing, the newer first (`newestFirst`).
 */
export function pick<T>(candidates: readonly T[], k: number, options: PickOptions<T>): T[] {
  const vectors = new Map<string, Float32Array | undefined>();
  const vectorOf = (item: T) => {
    const id = options.id(item);
    if (!vectors.has(id)) vectors.set(id, options.vector(id));
    return vectors.get(id);
  };
  const similarity = (a: T, b: T) => {
    const [x, y] = [vectorOf(a), vectorOf(b)];
    return x && y ? cosine(x, y) : wordOverlap(options.text(a), options.text(b));
  };
  return newestFirst(diverse(candidates, k, options.score, similarity), options.writtenAt, similarity);
}
