/**
 * Opens the encrypted store: salt → Argon2id key → SQLCipher connection → verify → pragmas →
 * migrations. An existing database is only ever read until the key is proven right; whatever goes
 * wrong, the old file is left as it was.
 */
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readSync } from "node:fs";
import { dirname, join } from "node:path";
import Database from "better-sqlite3-multiple-ciphers";
import type { Store, StoreOpenOptions } from "../../kernel/sdk.js";
import { isSparError, SparError } from "../../kernel/sdk.js";
import { deriveKey, rawKeyLiteral, readOrCreateSalt, readSalt } from "./key.js";
import { migrate } from "./migrations.js";
import { createSqliteStore } from "./queries.js";
import { openRetained } from "./retain.js";

export const DB_FILE = "spar.db";
export const SALT_FILE = "spar.db.salt";

/**
 * Opens (creating on first use) `<home>/spar.db`. The caller still owns and zeroizes
 * `options.masterSecret`; the store reads it once, for the key derivation, and keeps no reference.
 *
 * @example
 * const store = await openSqliteStore({ home, masterSecret });
 * const bout = store.bouts.create(fighterId);
 */
export async function openSqliteStore(options: StoreOpenOptions): Promise<Store> {
  mkdirSync(options.home, { recursive: true, mode: 0o700 });
  const dbPath = join(options.home, DB_FILE);
  const saltPath = join(options.home, SALT_FILE);
  const exists = existsSync(dbPath);
  if (!exists && existsSync(`${dbPath}-wal`)) {
    // A WAL without its database holds committed data a fresh database would silently drop.
    throw new SparError("STORE_FAILED", `${dbPath} is missing but ${dbPath}-wal exists; restore ${dbPath}`);
  }
  const salt = exists ? readSalt(saltPath, dbPath) : readOrCreateSalt(saltPath, dbPath);
  const key = await deriveKey(options.masterSecret, salt);
  const db = openKeyed(dbPath, key, exists);
  try {
    // FULL: a turn's messages are durable once append returns, even across a power loss.
    db.exec(
      "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 5000",
    );
    migrate(db, dbPath);
    restrictToOwner(dbPath);
    return createSqliteStore(db);
  } catch (err) {
    db.close();
    throw isSparError(err)
      ? err
      : new SparError("STORE_FAILED", `cannot open ${dbPath}: ${messageOf(err)}`, {}, { cause: err });
  }
}

/** Opens the connection with the key and proves the key by reading the schema. Zeroizes `key`. */
function openKeyed(dbPath: string, key: Buffer, mustExist: boolean): Database.Database {
  const literal = rawKeyLiteral(key);
  key.fill(0);
  let db: Database.Database;
  try {
    db = openRetained(dbPath, { fileMustExist: mustExist });
  } catch (err) {
    literal.fill(0);
    throw new SparError("STORE_FAILED", `cannot open ${dbPath}: ${messageOf(err)}`, {}, { cause: err });
  }
  try {
    db.exec("PRAGMA cipher = 'sqlcipher'; PRAGMA legacy = 4");
    // db.key() is `PRAGMA key="x'…'"` without putting the key in a SQL string we could not wipe.
    const rc = db.key(literal);
    if (rc !== 0) throw new Error(`sqlite3_key returned ${rc}`);
    db.prepare("SELECT count(*) FROM sqlite_master").pluck().get();
    return db;
  } catch (err) {
    db.close();
    throw verifyError(dbPath, err);
  } finally {
    literal.fill(0);
  }
}

/** SQLCipher says "file is not a database" (SQLITE_NOTADB) alike for a wrong key, plaintext and garbage. */
function verifyError(dbPath: string, err: unknown): SparError {
  const code = err instanceof Database.SqliteError ? err.code : undefined;
  if (code !== "SQLITE_NOTADB") {
    return new SparError("STORE_FAILED", `cannot read ${dbPath}: ${messageOf(err)}`, {}, { cause: err });
  }
  if (isPlaintextSqlite(dbPath)) {
    return new SparError(
      "STORE_FAILED",
      `${dbPath} is an unencrypted SQLite database, not one Spar created; move it away to start afresh`,
    );
  }
  return new SparError(
    "STORE_KEY_INVALID",
    `cannot decrypt ${dbPath}: the master secret does not match the one it was created with. Either ` +
      `${join(dirname(dbPath), "master.key")} is not the original, or SPAR_MASTER_KEY is set to a different ` +
      "value (it takes precedence over master.key). A damaged file fails the same way. The file was left untouched",
    {},
    { cause: err },
  );
}

/** Encrypted or not, the database is nobody else's business: owner-only, like master.key. */
function restrictToOwner(dbPath: string): void {
  if (process.platform === "win32") return;
  for (const file of [dbPath, `${dbPath}-wal`, `${dbPath}-shm`]) {
    if (existsSync(file)) chmodSync(file, 0o600);
  }
}

const SQLITE_MAGIC = Buffer.from("SQLite format 3\0", "latin1");

function isPlaintextSqlite(path: string): boolean {
  const head = Buffer.alloc(SQLITE_MAGIC.length);
  const fd = openSync(path, "r");
  try {
    return readSync(fd, head, 0, head.length, 0) === head.length && head.equals(SQLITE_MAGIC);
  } finally {
    closeSync(fd);
  }
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
