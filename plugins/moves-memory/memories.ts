/**
 * A fighter's memories, in this plugin's `memories` collection (plugin.json): key/value notes whose
 * relevance (score0 at scored_at) decays over time and is raised again when recalled. recall.ts
 * ranks; this finds candidates and keeps scores.
 */
import { randomUUID } from "node:crypto";
import type { Collection, PluginData, RingServices, TxCollection } from "../../sdk/index.js";
import { isSparError } from "../../sdk/index.js";
import { countMatches, matchWords } from "../../sdk/kits/text.js";

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
};

/** A memory candidate for a query, with how many query words it contains. */
export type MemoryMatch = MemoryRecord & { matches: number };

/** Enough to rank from, few enough that a fighter with a huge memory stays quick. */
export const MAX_CANDIDATES = 1000;
/** How many of a fighter's memories a search reads at most: the most recently scored ones. */
export const MAX_SCANNED = 10_000;

export interface Memories {
  /** Stores or replaces the value under `key`; a stored memory starts (or restarts) at score 1. */
  put(fighterId: string, key: string, value: string): Promise<MemoryRecord>;
  /**
   * Memories holding any of `words` in key or value (all of them for no words): most words matched
   * first, then the most recently scored.
   */
  candidates(fighterId: string, words: readonly string[]): Promise<MemoryMatch[]>;
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
    async put(fighterId, key, value) {
      await fighters.get(fighterId);
      // Another node storing the same new key at once makes this CONFLICT; again, it finds theirs.
      return retryOnConflict(() =>
        data.transaction(async (tx) => {
          const held = tx.memories as TxCollection<MemoryRecord>;
          const at = now();
          const [found] = await held.find({ where: { fighter_id: fighterId, key }, limit: 1 });
          const record: MemoryRecord = found
            ? { ...found, value, score0: 1, scored_at: at }
            : {
                id: randomUUID(),
                fighter_id: fighterId,
                key,
                value,
                score0: 1,
                scored_at: at,
                created_at: at,
              };
          held.put(record);
          return record;
        }),
      );
    },
    async candidates(fighterId, words) {
      const bound = matchWords(words);
      const rows = await memories.find({
        where: { fighter_id: fighterId },
        order: { by: ["scored_at"], desc: true },
        limit: MAX_SCANNED,
      });
      const matched: MemoryMatch[] = [];
      for (const row of rows) {
        const matches = bound.length === 0 ? 0 : countMatches(bound, row.key, row.value);
        if (bound.length === 0 || matches > 0) matched.push({ ...row, matches });
      }
      // Stable: equal matches stay most recently scored first, as the rows came.
      return matched.sort((a, b) => b.matches - a.matches).slice(0, MAX_CANDIDATES);
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

async function retryOnConflict<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (!isSparError(err) || err.code !== "CONFLICT") throw err;
    return work();
  }
}
