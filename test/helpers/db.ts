/** Reads a data dir's encrypted database directly, read-only, for assertions about what is on disk. */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { deriveKey, rawKeyLiteral } from "../../plugins/store-sqlite/key.js";
import { openRetained } from "../../plugins/store-sqlite/retain.js";

/** Runs `query` (one value) against `<home>/spar.db`, keyed from `master.key` or `masterSecret`. */
export async function queryValue(home: string, query: string, masterSecret?: Buffer): Promise<unknown> {
  return withDb(home, masterSecret, (db) => db.prepare(query).pluck().get());
}

/** Runs `query` against `<home>/spar.db` and returns every row it answers. */
export async function queryRows(
  home: string,
  query: string,
  masterSecret?: Buffer,
  params: unknown[] = [],
): Promise<unknown[]> {
  return withDb(home, masterSecret, (db) => db.prepare(query).all(...params));
}

async function withDb<T>(
  home: string,
  masterSecret: Buffer | undefined,
  read: (db: ReturnType<typeof openRetained>) => T,
): Promise<T> {
  const secret = masterSecret ?? readFileSync(join(home, "master.key"));
  const key = await deriveKey(secret, readFileSync(join(home, "spar.db.salt")));
  // Retained like the store's own connections: Node 24 aborts when one of these is collected.
  const db = openRetained(join(home, "spar.db"), { readonly: true, fileMustExist: true });
  try {
    db.exec("PRAGMA cipher = 'sqlcipher'; PRAGMA legacy = 4");
    db.key(rawKeyLiteral(key));
    return read(db);
  } finally {
    db.close();
  }
}
