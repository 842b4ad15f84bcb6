/**
 * Keyword search over a fighter's memories: a memory ranks by how many distinct query words occur in
 * its key or value. Deliberately simple (LIKE, no FTS) until a later migration brings scores and decay.
 */
import type Database from "better-sqlite3-multiple-ciphers";
import type { MemoryRecord } from "../../kernel/sdk.js";

/** More words add little to ranking and make the statement long; the rest of the query is ignored. */
export const MAX_QUERY_WORDS = 8;

const STOPWORDS = new Set(
  (
    "an and or of to in on at is are was were be been it its for with as by from that this these those " +
    "what which who whom how why when where do does did my me you your we our us he she they them his her " +
    "about not no so if but have has had can could will would should shall may there their than then " +
    "into any all some just also very the"
  ).split(" "),
);

/**
 * The words a query searches for: lowercase runs of letters and digits, at least 2 long, stopwords
 * dropped, each once. Only letters and digits survive, so no word can carry a LIKE wildcard.
 */
export function queryWords(query: string): string[] {
  const words = query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  const kept = words.filter((w) => w.length >= 2 && !STOPWORDS.has(w));
  return [...new Set(kept)].slice(0, MAX_QUERY_WORDS);
}

type SearchStatement = Database.Statement<unknown[], MemoryRecord>;

/**
 * Returns `search(fighterId, query, limit)` with one prepared statement per word count, built on
 * first use and kept, so a store prepares at most MAX_QUERY_WORDS + 1 of them.
 */
export function createMemorySearch(db: Database.Database) {
  const statements = new Map<number, SearchStatement>();
  const statementFor = (wordCount: number): SearchStatement => {
    let statement = statements.get(wordCount);
    if (!statement) {
      statement = db.prepare<unknown[], MemoryRecord>(searchSql(wordCount));
      statements.set(wordCount, statement);
    }
    return statement;
  };
  return (fighterId: string, query: string, limit: number): MemoryRecord[] => {
    const max = Math.floor(limit);
    if (!Number.isSafeInteger(max) || max < 1) return [];
    const words = queryWords(query);
    const patterns = words.flatMap((w) => [`%${w}%`, `%${w}%`]);
    return statementFor(words.length).all(...patterns, fighterId, max);
  };
}

/** Ties (and the no-word case) go newest first: `accessed_at` is set whenever the memory is written. */
function searchSql(wordCount: number): string {
  const columns = "id, fighter_id, key, value, created_at";
  if (wordCount === 0) {
    return `SELECT ${columns} FROM memories WHERE fighter_id = ? ORDER BY accessed_at DESC, rowid DESC LIMIT ?`;
  }
  // LIKE is case-insensitive for ASCII; the words are already lowercase.
  const hits = Array.from({ length: wordCount }, () => "(key LIKE ? OR value LIKE ?)").join(" + ");
  return `SELECT ${columns} FROM (
  SELECT ${columns}, accessed_at, rowid AS rid, ${hits} AS hits FROM memories WHERE fighter_id = ?
) WHERE hits > 0 ORDER BY hits DESC, accessed_at DESC, rid DESC LIMIT ?`;
}
