/**
 * A fighter's memories: key/value notes whose relevance (score0 at scored_at) decays over time and is
 * raised again when recalled. The kernel does the ranking; the store finds candidates and keeps scores.
 */
import { randomUUID } from "node:crypto";
import type Database from "better-sqlite3-multiple-ciphers";
import type { MemoryMatch, MemoryRecord } from "../../sdk/index.js";
import { SparError } from "../../sdk/index.js";
import type { StoreData } from "./sync-store.js";
import { FOLD, matchCountSql, matchWords, statementsByWordCount } from "./word-match.js";

/** Enough for the kernel to rank from, few enough that a fighter with a huge memory stays quick. */
export const MAX_CANDIDATES = 1000;

const COLUMNS = "id, fighter_id, key, value, score0, scored_at, created_at";

interface PutParams {
  id: string;
  fighter_id: string;
  key: string;
  value: string;
  at: string;
}

/** Memories over `db`; `requireLiveFighter` throws FIGHTER_NOT_FOUND for a fighter that may not write. */
export function createMemories(
  db: Database.Database,
  now: () => string,
  requireLiveFighter: (fighterId: string) => void,
): StoreData["memories"] {
  const s = {
    // accessed_at (from migration 1, NOT NULL) keeps meaning "last written or recalled".
    put: db.prepare<[PutParams], MemoryRecord>(
      `INSERT INTO memories (id, fighter_id, key, value, score0, scored_at, created_at, accessed_at)
       VALUES (@id, @fighter_id, @key, @value, 1, @at, @at, @at)
       ON CONFLICT (fighter_id, key) DO UPDATE SET value = excluded.value, score0 = 1,
         scored_at = excluded.scored_at, accessed_at = excluded.accessed_at
       RETURNING ${COLUMNS}`,
    ),
    rescore: db.prepare<[number, string, string, string], void>(
      "UPDATE memories SET score0 = ?, scored_at = ?, accessed_at = ? WHERE id = ?",
    ),
  };
  const candidatesFor = statementsByWordCount<MemoryMatch>(db, candidatesSql);

  const rescore = db.transaction((updates: { id: string; score0: number }[], at: string) => {
    for (const { id, score0 } of updates) s.rescore.run(score0, at, at, id);
  });

  return {
    put(fighterId, key, value) {
      requireLiveFighter(fighterId);
      const record = s.put.get({ id: randomUUID(), fighter_id: fighterId, key, value, at: now() });
      if (!record) throw new SparError("INTERNAL", `memory ${key} was not written`);
      return record;
    },
    candidates(fighterId, words) {
      const bound = matchWords(words);
      return candidatesFor(bound.length).all(fighterId, ...bound);
    },
    rescore: (updates, at) => rescore.immediate(updates, at),
  };
}

/**
 * Most words matched first, then the most recently scored. The key and value are folded once per row
 * (the CTE is materialized so the fold is not repeated per word) and joined by a newline, which no
 * word (letters and digits) can straddle.
 */
function candidatesSql(wordCount: number): string {
  if (wordCount === 0) {
    return `SELECT ${COLUMNS}, 0 AS matches FROM memories WHERE fighter_id = ?
      ORDER BY scored_at DESC, rowid DESC LIMIT ${MAX_CANDIDATES}`;
  }
  return `WITH folded AS MATERIALIZED (
  SELECT ${COLUMNS}, rowid AS rid, ${FOLD}(key || char(10) || value) AS hay FROM memories WHERE fighter_id = ?
), counted AS (
  SELECT ${COLUMNS}, rid, ${matchCountSql(wordCount, "hay")} AS matches FROM folded
)
SELECT ${COLUMNS}, matches FROM counted WHERE matches > 0
ORDER BY matches DESC, scored_at DESC, rid DESC LIMIT ${MAX_CANDIDATES}`;
}
