/**
 * A fighter's memories: key/value notes whose relevance (score0 at scored_at) decays and is raised
 * again when recalled. Key and value are sealed; `key_mac` (an HMAC of the key) keeps one memory per
 * key without the key in plaintext. Candidates are matched after decryption, over the fighter's
 * MAX_SCANNED most recently scored memories.
 */
import { randomUUID } from "node:crypto";
import type { MemoryMatch, MemoryRecord } from "../../sdk/index.js";
import { SparError } from "../../sdk/index.js";
import { inTransaction } from "./connection.js";
import { requireLiveFighter, type StoreContext, type StoreData } from "./context.js";
import { countMatches, matchWords } from "./word-match.js";

/** Enough for the kernel to rank from, few enough that a fighter with a huge memory stays quick. */
export const MAX_CANDIDATES = 1000;
/** How many of a fighter's memories a search decrypts at most: the most recently scored ones. */
export const MAX_SCANNED = 10_000;

interface MemoryDbRow {
  seq: number;
  id: string;
  fighter_id: string;
  key: Buffer;
  value: Buffer;
  score0: number;
  scored_at: string;
  created_at: string;
}

const COLUMNS = "seq, id, fighter_id, key, value, score0, scored_at, created_at";

export function createMemories(ctx: StoreContext): StoreData["memories"] {
  const { pool, cipher, now } = ctx;
  const toRecord = (row: MemoryDbRow): MemoryRecord => ({
    id: row.id,
    fighter_id: row.fighter_id,
    key: cipher.open("memories.key", row.key),
    value: cipher.open("memories.value", row.value),
    score0: row.score0,
    scored_at: row.scored_at,
    created_at: row.created_at,
  });

  return {
    async put(fighterId, key, value) {
      await requireLiveFighter(pool, fighterId);
      const at = now();
      const row = (
        await pool.query<MemoryDbRow>(
          `INSERT INTO memories (id, fighter_id, key_mac, key, value, score0, scored_at, created_at)
           VALUES ($1, $2, $3, $4, $5, 1, $6, $6)
           ON CONFLICT (fighter_id, key_mac) DO UPDATE SET value = excluded.value, score0 = 1,
             scored_at = excluded.scored_at
           RETURNING ${COLUMNS}`,
          [
            randomUUID(),
            fighterId,
            cipher.mac("memories.key", `${fighterId}\0${key}`),
            cipher.seal("memories.key", key),
            cipher.seal("memories.value", value),
            at,
          ],
        )
      ).rows[0];
      if (!row) throw new SparError("INTERNAL", `memory ${key} was not written`);
      return toRecord(row);
    },
    async candidates(fighterId, words) {
      const bound = matchWords(words);
      const rows = (
        await pool.query<MemoryDbRow>(
          `SELECT ${COLUMNS} FROM memories WHERE fighter_id = $1 ORDER BY scored_at DESC, seq DESC LIMIT $2`,
          [fighterId, MAX_SCANNED],
        )
      ).rows;
      // Most words matched first, then the most recently scored (the order the rows came in).
      const matched: MemoryMatch[] = [];
      for (const row of rows) {
        const record = toRecord(row);
        const matches = bound.length === 0 ? 0 : countMatches(bound, record.key, record.value);
        if (bound.length === 0 || matches > 0) matched.push({ ...record, matches });
      }
      return matched.sort((a, b) => b.matches - a.matches).slice(0, MAX_CANDIDATES);
    },
    rescore: (updates, at) =>
      inTransaction(pool, async (client) => {
        for (const { id, score0 } of updates) {
          await client.query("UPDATE memories SET score0 = $1, scored_at = $2 WHERE id = $3", [
            score0,
            at,
            id,
          ]);
        }
      }),
  };
}
