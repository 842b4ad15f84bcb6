/**
 * How a connection is keyed: SQLCipher 4's format (AES-256) with a raw key. Shared by the store's own
 * connection and the integrity check's read-only one, so both read the file the same way.
 */
import type Database from "better-sqlite3-multiple-ciphers";

/** Sets the cipher and gives SQLite the raw-key literal (`x'…'`, see key.ts). The caller zeroizes it. */
export function keyConnection(db: Database.Database, literal: Buffer): void {
  db.exec("PRAGMA cipher = 'sqlcipher'; PRAGMA legacy = 4");
  // db.key() is `PRAGMA key="x'…'"` without putting the key in a SQL string we could not wipe.
  const rc = db.key(literal);
  if (rc !== 0) throw new Error(`sqlite3_key returned ${rc}`);
}
