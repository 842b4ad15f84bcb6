/**
 * Opens the encrypted store: salt → Argon2id key → SQLCipher connection → verify → pragmas →
 * migrations. An existing database is only ever read until the key is proven right; whatever goes
 * wrong, the old file is left as it was.
 */
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import Database from "better-sqlite3-multiple-ciphers";
import type { Logger, Store, StoreOpenOptions } from "../../sdk/index.js";
import { isSparError, SparError } from "../../sdk/index.js";
import { createBackup } from "./backup.js";
import { keyConnection } from "./cipher.js";
import { sqliteCollections } from "./collections.js";
import { corruptError, guardStore, isCorruption } from "./corruption.js";
import { createGroupSync, openWalFlush } from "./durability.js";
import { startIntegrityCheck } from "./integrity.js";
import { deriveKey, rawKeyLiteral, readOrCreateSalt, readSalt } from "./key.js";
import { migrate } from "./migrations.js";
import { createSqliteStore } from "./queries.js";
import { createRefusedTurns } from "./refused-turns.js";
import { openRotated, rekeyStore } from "./rekey.js";
import { openRetained } from "./retain.js";
import { isStorageFull, storageFullError } from "./storage-full.js";
import { inspectWal } from "./wal-check.js";

export const DB_FILE = "spar.db";
export const SALT_FILE = "spar.db.salt";

export interface SqliteStoreSettings {
  /** Where a damaged database is reported (one error line) and a check that could not run (a warning). */
  log?: Logger;
  /** The integrity check's worker module; tests running from sources point it at the built one. */
  integrityWorker?: URL;
}

/** The methods that only read. Every other method is a write, and writes share transactions. */
const READS: ReadonlySet<string> = new Set([
  "fighters.list",
  "fighters.get",
  "fighters.getByName",
  "bouts.get",
  "bouts.latest",
  "bouts.list",
  "turns.get",
  "turns.list",
  "turns.unfinished",
  "turns.awaiting",
  "messages.list",
  "messages.tail",
  "summaries.get",
  "idempotency.get",
  "usage.summary",
  "usage.query",
  "usage.spent",
  "collectionRows.get",
  "collectionRows.find",
  "collectionRows.count",
  "collectionRows.rank",
]);

/** A turn's own writes: the kernel awaits `store.durable()` before it acknowledges the turn. */
const DEFERRED: ReadonlySet<string> = new Set(["turns.begin", "turns.append", "turns.finish"]);

/** The page cache, in SQLite's negative-KiB form: 2 MiB, SQLite's default (see the pragmas below). */
const PAGE_CACHE_KIB = -2000;

const SILENT: Logger = { info: () => undefined, warn: () => undefined, error: () => undefined };

/**
 * Opens (creating on first use) `<home>/spar.db` and starts its integrity check in the background
 * (`store.integrity()`). The caller still owns and zeroizes `options.masterSecret`; the store reads
 * it once, for the key derivation, and keeps no reference.
 *
 * @example
 * const store = await openSqliteStore({ home, masterSecret }, { log });
 * const { turn, bout } = await store.turns.begin({ fighter_id, user: { role: "user", content: "hi" } });
 */
export async function openSqliteStore(
  options: StoreOpenOptions,
  settings: SqliteStoreSettings = {},
): Promise<Store> {
  mkdirSync(options.home, { recursive: true, mode: 0o700 });
  const dbPath = join(options.home, DB_FILE);
  const saltPath = join(options.home, SALT_FILE);
  const exists = existsSync(dbPath);
  // SQLite opens an empty file as a new database: a spar.db truncated to nothing would silently
  // become an empty one, its data gone without a word.
  if (exists && statSync(dbPath).size === 0) throw corruptError(dbPath, "it is empty: 0 bytes");
  if (!exists && existsSync(`${dbPath}-wal`)) {
    // A WAL without its database holds committed data a fresh database would silently drop.
    throw new SparError("STORE_FAILED", `${dbPath} is missing but ${dbPath}-wal exists; restore ${dbPath}`);
  }
  if (exists) {
    // Before SQLite sees it: its recovery would drop a damaged log's commits without a word.
    const wal = inspectWal(dbPath);
    if (wal.status === "damaged") throw corruptError(dbPath, wal.reason);
  }
  const salt = exists ? readSalt(saltPath, dbPath) : readOrCreateSalt(saltPath, dbPath);
  // The integrity check's own connection needs the key too: a second literal, handed to its worker.
  let checkKey: Buffer = Buffer.alloc(0);
  // With the given secret, else the one an interrupted `spar rekey` left (rekey.ts).
  const db = await openRotated(
    options.home,
    options.masterSecret,
    async (secret) => {
      const key = await deriveKey(secret, salt);
      const literal = rawKeyLiteral(key);
      try {
        const opened = openKeyed(dbPath, key, exists);
        checkKey = literal;
        return opened;
      } catch (err) {
        literal.fill(0);
        throw err;
      }
    },
    settings.log ?? SILENT,
  );
  try {
    // NORMAL: a commit writes the WAL and returns; the call that made it waits for a shared fsync of
    // the WAL before it resolves (durability.ts), which is FULL's guarantee at a batch's cost.
    // cache_size: better-sqlite3 builds SQLite with a 16 MiB page cache, which fills as the database
    // grows and stays resident; SQLite's own 2 MiB holds what a turn reads (a bout's tail, by index).
    db.exec(
      `PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 5000; PRAGMA cache_size = ${PAGE_CACHE_KIB}`,
    );
    migrate(db, dbPath);
    restrictToOwner(dbPath);
    const sync = createGroupSync(await openWalFlush(dbPath));
    sync.wrote(); // the migrations, and the switch to WAL on a new database
    await sync.durable();
    const data = createSqliteStore(db);
    const totalChanges = db.prepare<[], number>("SELECT total_changes()").pluck();
    const check = startIntegrityCheck(dbPath, checkKey, settings.integrityWorker);
    const store = guardStore(data, {
      dbPath,
      log: settings.log ?? SILENT,
      check,
      refused: createRefusedTurns(db, () => new Date().toISOString()),
      durability: { sync, db, changes: () => totalChanges.get() as number, reads: READS, deferred: DEFERRED },
    });
    const settled = () => Promise.all([store.integrity(), store.durable()]);
    return {
      ...store,
      collections: sqliteCollections(store.collectionRows),
      backup: createBackup(db, dbPath, salt),
      rekey: (secret) => rekeyStore({ db, dbPath, salt, settled }, secret),
    };
  } catch (err) {
    checkKey.fill(0);
    db.close();
    if (isSparError(err)) throw err;
    if (isCorruption(err)) throw corruptError(dbPath, messageOf(err), err);
    if (isStorageFull(err)) throw storageFullError(options.home, `${dbPath} could not be opened`, err);
    throw new SparError("STORE_FAILED", `cannot open ${dbPath}: ${messageOf(err)}`, {}, { cause: err });
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
    keyConnection(db, literal);
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
  // Damage past the first page: the key decrypted that one (a wrong key fails there, as NOTADB).
  if (code?.startsWith("SQLITE_CORRUPT")) return corruptError(dbPath, messageOf(err), err);
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
      `value (it takes precedence over master.key). A damaged salt file (${dbPath}.salt) or database fails the same way. The file was left untouched. ` +
      "To recover: restore the original secret (put the original master.key back, or set SPAR_MASTER_KEY to it), " +
      "or start afresh with: spar init --fresh (it moves the database aside as spar.db.unreadable-<time>, deleting nothing, and makes a new one)",
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
