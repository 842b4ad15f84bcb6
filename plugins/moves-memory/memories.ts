/**
 * A fighter's memories, in this plugin's `memories` collection (plugin.json): key/value notes whose
 * relevance (score0 at scored_at) decays over time and is raised again when recalled. recall.ts
 * ranks; this finds candidates by words (the store's full-text index) and keeps scores.
 */
import { randomUUID } from "node:crypto";
import type { Collection, PluginData, RingServices, TaintSource, TxCollection } from "../../sdk/index.js";
import { isSparError } from "../../sdk/index.js";
import { queryWords } from "../../sdk/kits/text.js";

/** One remembered fact, as stored (and as `api.data.memories` holds it). A type, not an interface: a Doc. */
export type MemoryRecord = {
  id: string;
  fighter_id: string;
  key: string;
  value: string;
  /** Relevance at `scored_at`; decays as score0 · e^(−rate · days since scored_at). */
  score0: number;
  scored_at: string;
  created_at: string;
  /** When its value was last written (absent on memories stored before it was kept: created_at). */
  written_at?: string;
  /** The untrusted content the turn that stored it had taken in (its first source), if any. */
  taint?: TaintSource;
};

/** How many candidates each of recall's rankings (words, meaning) gives for `limit` results. */
export const candidatesFor = (limit: number) => Math.max(20, limit * 4);

export interface Memories {
  /** Stores or replaces the value under `key`; a stored memory starts (or restarts) at score 1. */
  put(fighterId: string, key: string, value: string, taint?: TaintSource): Promise<MemoryRecord>;
  /** The fighter's `count` memories best matching the query's words (key or value), best first. */
  byWords(fighterId: string, query: string, count?: number): Promise<MemoryRecord[]>;
  /** The fighter's memories of these ids that still exist. */
  byIds(fighterId: string, ids: readonly string[]): Promise<MemoryRecord[]>;
  /** The fighter's most recently scored memories: what a flush dedupes against. */
  recent(fighterId: string, limit: number): Promise<MemoryRecord[]>;
  /** Every memory, a page at a time, as embeddings need them. */
  rows(): AsyncIterable<{ id: string; fighter_id: string; text: string }[]>;
  /** Sets each memory's score0 and scored_at (reinforcement on access), together. */
  rescore(updates: { id: string; score0: number }[], at: string): Promise<void>;
}

/**
 * Memories over the plugin's data; `fighters.get` refuses (FIGHTER_NOT_FOUND) a fighter that is not live.
 *
 * @example
 * const memories = createMemories(api.data, api.ring.fighters);
 * await memories.put(fighter.id, "hotel", "Casa do Tejo");
 */
export function createMemories(
  data: PluginData,
  fighters: Pick<RingServices["fighters"], "get">,
  now: () => string = () => new Date().toISOString(),
): Memories {
  const memories = data.memories as Collection<MemoryRecord>;
  return {
    async put(fighterId, key, value, taint) {
      await fighters.get(fighterId);
      // Another node storing the same new key at once makes this CONFLICT; again, it finds theirs.
      return retryOnConflict(() =>
        data.transaction(async (tx) => {
          const held = tx.memories as TxCollection<MemoryRecord>;
          const at = now();
          const [found] = await held.find({ where: { fighter_id: fighterId, key }, limit: 1 });
          const base: MemoryRecord = found
            ? { ...found, value, score0: 1, scored_at: at, written_at: at }
            : {
                id: randomUUID(),
                fighter_id: fighterId,
                key,
                value,
                score0: 1,
                scored_at: at,
                created_at: at,
                written_at: at,
              };
          // A value written again by a clean turn is clean again; a tainted write marks it.
          const { taint: _old, ...rest } = base;
          const record: MemoryRecord = taint ? { ...rest, taint } : rest;
          held.put(record);
          return record;
        }),
      );
    },
    async byWords(fighterId, query, count = candidatesFor(5)) {
      const found = await memories.rank(searchWords(query), {
        where: { fighter_id: fighterId },
        limit: count,
      });
      return found.map((f) => f.doc);
    },
    async byIds(fighterId, ids) {
      const found = await Promise.all(ids.map((id) => memories.get(id)));
      return found.filter((m): m is MemoryRecord => m !== undefined && m.fighter_id === fighterId);
    },
    async recent(fighterId, limit) {
      return memories.find({
        where: { fighter_id: fighterId },
        order: { by: ["scored_at"], desc: true },
        limit,
      });
    },
    async *rows() {
      let after: string | undefined;
      for (;;) {
        const page = await memories.find({ limit: 5_000, ...(after ? { after } : {}) });
        yield page.map((m) => ({ id: m.id, fighter_id: m.fighter_id, text: `${m.key}: ${m.value}` }));
        if (page.length < 5_000) return;
        after = page[page.length - 1]?.id;
      }
    },
    async rescore(updates, at) {
      if (updates.length === 0) return;
      await data.transaction(async (tx) => {
        const held = tx.memories as TxCollection<MemoryRecord>;
        const found = await Promise.all(updates.map(({ id }) => held.get(id)));
        updates.forEach(({ score0 }, i) => {
          const memory = found[i];
          if (memory) held.put({ ...memory, score0, scored_at: at });
        });
      });
    },
  };
}

/**
 * What a query asks the word index for: its content words (no "where", "does", "my": every memory
 * has them, and BM25 would weigh them near nothing while reading every row that holds them), or the
 * query itself when it has none.
 */
export function searchWords(query: string): string {
  const words = queryWords(query);
  return words.length > 0 ? words.join(" ") : query;
}

async function retryOnConflict<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (!isSparError(err) || err.code !== "CONFLICT") throw err;
    return work();
  }
}
