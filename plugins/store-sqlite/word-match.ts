/**
 * Counting query words in text, shared by memory candidates and knowledge queries. The SQL differs
 * only by how many words it binds, so each caller keeps one prepared statement per word count.
 */
import type Database from "better-sqlite3-multiple-ciphers";

/**
 * The kernel asks with at most 8 words; beyond that a statement only grows. Extra words are dropped
 * rather than refused, so a caller sending more still gets an answer ranked by the first ones.
 */
export const MAX_MATCH_WORDS = 8;

/** The name under which `registerFold` gives SQL a Unicode-aware lowercase. */
export const FOLD = "spar_fold";

/**
 * SQLite's own lower() folds ASCII only, while the kernel's words are lowercased by JavaScript
 * ("café"); folding the text the same way is what makes "Café" match. Registering a function
 * creates no Statement, so it needs no retaining (see retain.ts).
 */
export function registerFold(db: Database.Database): void {
  db.function(FOLD, { deterministic: true }, (text: unknown) =>
    typeof text === "string" ? text.toLowerCase() : text,
  );
}

/**
 * The words as bound: lowercased, each once, no empty one (an empty string is in every text), at
 * most MAX_MATCH_WORDS. Words are bound parameters searched with instr(), so no character in them
 * is special.
 */
export function matchWords(words: readonly string[]): string[] {
  const kept = words.map((w) => w.toLowerCase()).filter((w) => w.length > 0);
  return [...new Set(kept)].slice(0, MAX_MATCH_WORDS);
}

/** `(instr(hay, ?) > 0) + …`: how many of `count` bound words occur in the column `hay`. */
export function matchCountSql(count: number, hay: string): string {
  return Array.from({ length: count }, () => `(instr(${hay}, ?) > 0)`).join(" + ");
}

/**
 * `statementFor(n)` prepares `sqlFor(n)` on first use and keeps it: at most MAX_MATCH_WORDS + 1
 * statements per store, never one per call.
 */
export function statementsByWordCount<Row>(
  db: Database.Database,
  sqlFor: (wordCount: number) => string,
): (wordCount: number) => Database.Statement<unknown[], Row> {
  const statements = new Map<number, Database.Statement<unknown[], Row>>();
  return (wordCount) => {
    let statement = statements.get(wordCount);
    if (!statement) {
      statement = db.prepare<unknown[], Row>(sqlFor(wordCount));
      statements.set(wordCount, statement);
    }
    return statement;
  };
}
