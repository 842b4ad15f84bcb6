/**
 * Master key rotation, the database's half: `Store.rekey` re-encrypts every page under the key of a
 * new master secret in one rollback-journal transaction, and `openRotated` lets the next open find
 * whichever secret works after an interruption. The key files are the CLI's (lib/home.ts).
 *
 * Why an interruption is safe: SQLite3MC refuses to rekey in WAL mode, so the rekey runs in DELETE
 * mode with `synchronous = FULL`. Its rollback journal holds the original pages encrypted with the
 * OLD key, and the transaction commits when the journal is deleted. Killed before that, the journal
 * is hot and the next connection keyed with the old secret (still master.key then) rolls it back:
 * the file is the old database again. Killed after, every page is under the new key, which is in
 * master.key.next until the CLI moves it into master.key.
 *
 * The new key is given with the database's own cipher salt. By itself SQLite3MC gives a rekeyed
 * database a new salt in page 1, and the cipher reads the salt from the file when a connection is
 * keyed, before a hot journal is rolled back: killed while the commit wrote page 1, the old key's
 * connection derived its keys from the new salt and could neither roll the journal back nor read the
 * file, so neither key opened it. With one salt throughout, the old key rolls it back.
 */
import type Database from "better-sqlite3-multiple-ciphers";
import type { Logger } from "../../sdk/index.js";
import { isSparError, SparError } from "../../sdk/index.js";
import { type RekeySettlement, readNextMasterSecret, settleMasterKeyFiles } from "../../sdk/kits/store.js";
import { deriveKey, rawKeyLiteral, readCipherSalt } from "./key.js";

export interface RekeyTarget {
  db: Database.Database;
  dbPath: string;
  salt: Buffer;
  /** Resolves once nothing else uses the file: the integrity check ended, every write durable. */
  settled(): Promise<unknown>;
}

/**
 * `Store.rekey`: derives the key of `masterSecret` (same salt: the salt only has to be unique to the
 * database) and re-encrypts the database with it. The connection stays in DELETE mode with FULL
 * syncs afterwards, so any later commit on it is durable by itself; the next open returns to WAL.
 */
export async function rekeyStore(target: RekeyTarget, masterSecret: Buffer): Promise<void> {
  await target.settled();
  const key = await deriveKey(masterSecret, target.salt);
  const { db, dbPath } = target;
  let literal: Buffer | undefined;
  try {
    db.pragma("wal_checkpoint(TRUNCATE)");
    literal = rawKeyLiteral(key, readCipherSalt(dbPath));
    const mode = db.pragma("journal_mode = DELETE", { simple: true });
    if (mode !== "delete") {
      throw new SparError(
        "CONFLICT",
        `cannot rekey ${dbPath}: another connection has it open (stop the daemon)`,
      );
    }
    db.pragma("synchronous = FULL");
    const rc = db.rekey(literal);
    if (rc !== 0) throw new Error(`sqlite3_rekey returned ${rc}`);
    db.prepare("SELECT count(*) FROM sqlite_master").pluck().get();
  } catch (err) {
    if (isSparError(err)) throw err;
    throw new SparError("STORE_FAILED", `cannot rekey ${dbPath}: ${messageOf(err)}`, {}, { cause: err });
  } finally {
    key.fill(0);
    literal?.fill(0);
  }
}

/**
 * Opens with the given secret, and when that fails as a wrong key, with the one an interrupted
 * `spar rekey` left in master.key.next. The given secret goes first: a hot journal of an
 * interrupted rekey is under the old key, which is still the one in master.key. Once a secret
 * works, the key files are settled (settleMasterKeyFiles) and what was done is logged.
 */
export async function openRotated<T>(
  home: string,
  masterSecret: Buffer,
  open: (secret: Buffer) => Promise<T>,
  log: Logger,
): Promise<T> {
  let opened: T;
  let working = masterSecret;
  const next = readNextMasterSecret(home);
  try {
    try {
      opened = await open(masterSecret);
    } catch (err) {
      if (!next || !isSparError(err) || err.code !== "STORE_KEY_INVALID") throw err;
      opened = await open(next).catch(() => Promise.reject(err));
      working = next;
    }
    report(home, settleMasterKeyFiles(home, working), log);
    return opened;
  } finally {
    next?.fill(0);
  }
}

function report(home: string, outcome: RekeySettlement, log: Logger): void {
  if (outcome === "completed") {
    log.warn(
      `a master key rotation (spar rekey) in ${home} had re-encrypted the database but not finished; ` +
        "it is now complete: master.key holds the new secret",
    );
  } else if (outcome === "rolled-back") {
    log.warn(
      `a master key rotation (spar rekey) in ${home} was interrupted before the database was re-encrypted; ` +
        "it was rolled back: master.key is unchanged and master.key.next was removed",
    );
  }
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
