/**
 * Store.rekey and the open after an interrupted rotation, on the real encrypted file: the kill -9
 * proof is test/e2e/rekey.test.ts; here each state a rotation can leave is set up exactly.
 */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3-multiple-ciphers";
import { afterAll, describe, expect, it } from "vitest";
import { writeNextMasterSecret } from "../../lib/home.js";
import type { Logger } from "../../sdk/index.js";
import { keyConnection } from "./cipher.js";
import { deriveKey, rawKeyLiteral, readOrCreateSalt } from "./key.js";
import { rekeyStore } from "./rekey.js";
import { DB_FILE, openSqliteStore, SALT_FILE } from "./store.js";

const BUILT_WORKER = new URL("../../dist/plugins/store-sqlite/integrity-worker.js", import.meta.url);
const homes: string[] = [];
afterAll(() => {
  for (const home of homes) rmSync(home, { recursive: true, force: true });
});

/** A home with master.key, a database made with it and one fighter in it. */
async function homeWithData(): Promise<{ home: string; old: Buffer }> {
  const home = mkdtempSync(join(tmpdir(), "spar-rekey-"));
  homes.push(home);
  const old = randomBytes(32);
  writeFileSync(join(home, "master.key"), old, { mode: 0o600 });
  const store = await openSqliteStore({ home, masterSecret: old });
  await store.fighters.insert({
    id: "id-keeper",
    name: "keeper",
    manifest: { name: "keeper", description: "keeps", system_prompt: "Be brief." },
    created_at: "2026-01-01T00:00:00.000Z",
  });
  await store.close();
  return { home, old };
}

function collecting(into: string[]): Logger {
  return { info: () => undefined, warn: (m: string) => void into.push(m), error: () => undefined };
}

async function names(home: string, secret: Buffer, log?: Logger): Promise<string[]> {
  const store = await openSqliteStore({ home, masterSecret: secret }, { log, integrityWorker: BUILT_WORKER });
  try {
    return (await store.fighters.list()).map((f) => f.name);
  } finally {
    await store.close();
  }
}

describe("Store.rekey", () => {
  it("re-encrypts in place: the new secret opens the data, the old one is STORE_KEY_INVALID", async () => {
    const { home, old } = await homeWithData();
    const next = randomBytes(32);
    const store = await openSqliteStore({ home, masterSecret: old });
    await store.rekey(next);
    // Still usable after the rekey, and durable on its own (DELETE mode, FULL syncs).
    expect((await store.fighters.list()).map((f) => f.name)).toEqual(["keeper"]);
    await store.close();
    expect(await names(home, next)).toEqual(["keeper"]);
    await expect(openSqliteStore({ home, masterSecret: old })).rejects.toMatchObject({
      code: "STORE_KEY_INVALID",
    });
  });

  it("rolls back a rotation that never re-encrypted: master.key opens, master.key.next goes", async () => {
    const { home, old } = await homeWithData();
    writeNextMasterSecret(home, randomBytes(32));
    const warnings: string[] = [];
    expect(await names(home, old, collecting(warnings))).toEqual(["keeper"]);
    expect(existsSync(join(home, "master.key.next"))).toBe(false);
    expect(readFileSync(join(home, "master.key")).equals(old)).toBe(true);
    expect(warnings).toEqual([
      `a master key rotation (spar rekey) in ${home} was interrupted before the database was re-encrypted; ` +
        "it was rolled back: master.key is unchanged and master.key.next was removed",
    ]);
  });

  it("completes a rotation that re-encrypted: master.key.next opens and becomes master.key", async () => {
    const { home, old } = await homeWithData();
    const next = randomBytes(32);
    // As spar rekey does it: open (which settles any older rotation), write .next, rekey.
    const store = await openSqliteStore({ home, masterSecret: old });
    writeNextMasterSecret(home, next);
    await store.rekey(next);
    await store.close();
    const warnings: string[] = [];
    // The caller hands the old master.key, as the daemon would after a kill at this point.
    expect(await names(home, old, collecting(warnings))).toEqual(["keeper"]);
    expect(readFileSync(join(home, "master.key")).equals(next)).toBe(true);
    expect(["master.key.next", "master.key.old"].filter((f) => existsSync(join(home, f)))).toEqual([]);
    expect(warnings).toEqual([
      `a master key rotation (spar rekey) in ${home} had re-encrypted the database but not finished; ` +
        "it is now complete: master.key holds the new secret",
    ]);
  });

  it("leaves the files alone and says nothing when no rotation is pending", async () => {
    const { home, old } = await homeWithData();
    const warnings: string[] = [];
    expect(await names(home, old, collecting(warnings))).toEqual(["keeper"]);
    await expect(openSqliteStore({ home, masterSecret: randomBytes(32) })).rejects.toMatchObject({
      code: "STORE_KEY_INVALID",
    });
    expect(warnings).toEqual([]);
    expect(readFileSync(join(home, "master.key")).equals(old)).toBe(true);
  });
});

describe("a rekey killed while committing", () => {
  /**
   * The state such a kill leaves, built exactly: the database file wholly re-encrypted by
   * rekeyStore, beside a hot journal holding every original page under the old key. The database
   * is two pages (the schema and a table's one leaf); the journal comes from a child whose
   * transaction changes both, then grows the file past its cache of 10 pages, so the journal is
   * synced and pages are written, and kills itself before committing. Were page 1's cipher salt a new one, the old key could neither
   * roll that journal back nor read the file.
   */
  it("opens with the old secret: the journal rolls back, since the rekey kept the cipher salt", async () => {
    const home = mkdtempSync(join(tmpdir(), "spar-rekey-"));
    homes.push(home);
    const old = randomBytes(32);
    const dbPath = join(home, DB_FILE);
    const salt = readOrCreateSalt(join(home, SALT_FILE), dbPath);
    const oldKey = rawKeyLiteral(await deriveKey(old, salt));
    const keyed = (key: Buffer) => {
      const db = new Database(dbPath);
      keyConnection(db, key);
      return db;
    };
    const made = keyed(oldKey);
    made.exec("PRAGMA journal_mode = DELETE; CREATE TABLE pad(n INTEGER, x BLOB)");
    made.exec(
      "WITH RECURSIVE k(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM k WHERE n < 5) INSERT INTO pad SELECT n, zeroblob(100) FROM k",
    );
    made.close();
    const original = readFileSync(dbPath);
    expect(original.length).toBe(2 * 4096);

    const child = spawnSync(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `import Database from "better-sqlite3-multiple-ciphers";
         import { keyConnection } from "./dist/plugins/store-sqlite/cipher.js";
         const db = new Database(${JSON.stringify(dbPath)});
         keyConnection(db, Buffer.from(${JSON.stringify(oldKey.toString("latin1"))}, "latin1"));
         db.exec("PRAGMA journal_mode = DELETE; PRAGMA synchronous = FULL; PRAGMA cache_size = 10");
         db.exec("BEGIN IMMEDIATE; CREATE TABLE bulk(x); UPDATE pad SET n = n + 1000");
         db.exec("WITH RECURSIVE k(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM k WHERE n < 40) INSERT INTO bulk SELECT zeroblob(3000) FROM k");
         process.kill(process.pid, "SIGKILL");`,
      ],
      { cwd: fileURLToPath(new URL("../..", import.meta.url)) },
    );
    expect(child.signal).toBe("SIGKILL");
    const journal = readFileSync(`${dbPath}-journal`);

    // What a finished rekey makes of the original, with the journal of the killed commit beside it.
    writeFileSync(dbPath, original);
    rmSync(`${dbPath}-journal`);
    const db = keyed(oldKey);
    await rekeyStore({ db, dbPath, salt, settled: async () => undefined }, randomBytes(32));
    db.close();
    expect(readFileSync(dbPath).subarray(0, 16)).toEqual(original.subarray(0, 16));
    expect(readFileSync(dbPath).subarray(16, 4096).equals(original.subarray(16, 4096))).toBe(false);
    writeFileSync(`${dbPath}-journal`, journal);

    const store = await openSqliteStore({ home, masterSecret: old }, { integrityWorker: BUILT_WORKER });
    await store.close();
    expect(existsSync(`${dbPath}-journal`)).toBe(false);
    const reopened = keyed(oldKey);
    expect(reopened.prepare("SELECT count(*), sum(n) FROM pad").raw().get()).toEqual([5, 15]);
    reopened.close();
  });
});
