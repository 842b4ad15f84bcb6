/**
 * `Store.backup`: a consistent snapshot of the open database, taken on its own connection with
 * `VACUUM INTO`. SQLite3MC encrypts the copy with the main database's cipher and key, so no
 * plaintext page ever reaches the disk (better-sqlite3's `db.backup()` refuses an encrypted source:
 * "incompatible source and target databases"). The copy is written under a temporary name in the
 * destination's folder, created 0600 before SQLite writes a byte, fsynced, then linked into place, so
 * the destination either does not exist or holds a complete snapshot. Its manifest
 * (`<destination>.manifest.json`, lib/backup-manifest.ts: checksum, schema, the key-derivation salt)
 * is written next, by the store, so every caller leaves a backup `spar restore` takes; should it
 * fail, the snapshot is removed again rather than left without one.
 */
import { randomBytes } from "node:crypto";
import { closeSync, existsSync, linkSync, openSync, renameSync, statSync, unlinkSync } from "node:fs";
import { open } from "node:fs/promises";
import { basename, dirname, isAbsolute, join } from "node:path";
import type Database from "better-sqlite3-multiple-ciphers";
import { SparError } from "../../sdk/index.js";
import { manifestPathOf, writeBackupManifest } from "../../sdk/kits/store.js";
import { corruptError, isCorruption } from "./corruption.js";
import { isStorageFull, storageFullError } from "./storage-full.js";

/** What `backup` answers: the snapshot's size in bytes and its highest applied migration. */
export interface BackupResult {
  bytes: number;
  schema_version: number;
}

/**
 * How many turns of the event loop a backup waits for the open write batch to commit. A batch
 * commits on the turn after it opened (durability.ts), so this is only reached by a writer that
 * never stops; the caller gets STORE_FAILED and may try again.
 */
const MAX_WAITS = 10_000;

/**
 * Makes `backup(destination)` for the connection `db` of the database at `dbPath`. `VACUUM INTO`
 * cannot run inside a transaction, and writes share batched transactions, so a backup first waits
 * for the loop turn on which no batch is open; the snapshot then runs synchronously, so no write of
 * this process lands halfway through it (and another process's commits are isolated by its read
 * transaction).
 *
 * @example
 * const backup = createBackup(db, dbPath, salt);
 * const { bytes, schema_version } = await backup("/backups/spar-2026-01-01.db");
 */
export function createBackup(
  db: Database.Database,
  dbPath: string,
  salt: Buffer,
): (destination: string) => Promise<BackupResult> {
  const vacuumInto = db.prepare<[string], void>("VACUUM INTO ?");
  const schemaVersion = db.prepare<[], number | null>("SELECT max(version) FROM schema_migrations").pluck();

  return async (destination) => {
    checkDestination(destination);
    for (let waits = 0; db.inTransaction; waits++) {
      if (waits >= MAX_WAITS) {
        throw new SparError("STORE_FAILED", `could not back up ${dbPath}: writes never paused; try again`);
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
    const partial = join(
      dirname(destination),
      `.${basename(destination)}.partial-${randomBytes(6).toString("hex")}`,
    );
    // Created first, owner-only: VACUUM INTO accepts an empty file and keeps its mode.
    closeSync(openSync(partial, "wx", 0o600));
    try {
      const schema_version = schemaVersion.get() ?? 0;
      vacuumInto.run(partial);
      await fsyncPath(partial);
      placeAt(partial, destination);
      const bytes = statSync(destination).size;
      try {
        await writeBackupManifest(destination, { bytes, schema_version, salt });
      } catch (err) {
        unlinkSync(destination);
        throw err;
      }
      await fsyncPath(dirname(destination));
      return { bytes, schema_version };
    } catch (err) {
      if (existsSync(partial)) unlinkSync(partial);
      if (err instanceof SparError) throw err;
      if (isCorruption(err)) throw corruptError(dbPath, messageOf(err), err);
      if (isStorageFull(err)) throw storageFullError(dirname(destination), "the backup was not written", err);
      throw new SparError(
        "STORE_FAILED",
        `could not back up ${dbPath} to ${destination}: ${messageOf(err)}`,
        {},
        { cause: err },
      );
    }
  };
}

/** The destination: an absolute path, in a folder that exists, naming no file yet. */
export function checkDestination(destination: string): void {
  if (!isAbsolute(destination)) {
    throw new SparError("VALIDATION_FAILED", `the backup path must be absolute: ${destination}`);
  }
  const folder = dirname(destination);
  if (!existsSync(folder) || !statSync(folder).isDirectory()) {
    throw new SparError("VALIDATION_FAILED", `the backup's folder ${folder} does not exist`);
  }
  for (const path of [destination, manifestPathOf(destination)]) {
    if (existsSync(path)) {
      throw new SparError("CONFLICT", `${path} already exists; Spar does not overwrite a file with a backup`);
    }
  }
}

/** Puts the finished snapshot at `destination` without replacing a file that appeared meanwhile. */
function placeAt(partial: string, destination: string): void {
  try {
    linkSync(partial, destination);
    unlinkSync(partial);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "EEXIST" || existsSync(destination)) {
      throw new SparError(
        "CONFLICT",
        `${destination} already exists; Spar does not overwrite a file with a backup`,
      );
    }
    // A file system without hard links: a rename, checked just above, is the next best thing.
    renameSync(partial, destination);
  }
}

/** fsync of a file, or of a folder so the names in it are durable (a no-op where folders cannot be). */
async function fsyncPath(path: string): Promise<void> {
  const handle = await open(path, "r");
  try {
    await handle.sync();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== "EINVAL" && code !== "EPERM" && code !== "EISDIR") throw err;
  } finally {
    await handle.close();
  }
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
