import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3-multiple-ciphers";
import { afterAll, describe, expect, it } from "vitest";
import type { Logger, Store } from "../../sdk/index.js";
import { SparError } from "../../sdk/index.js";
import { damageTablePage } from "../../test/helpers/store-damage.js";
import { keyConnection } from "./cipher.js";
import { guardStore } from "./corruption.js";
import { createGroupSync } from "./durability.js";
import { quickCheck, type RunningCheck, startIntegrityCheck } from "./integrity.js";
import { deriveKey, rawKeyLiteral } from "./key.js";
import { openRetained } from "./retain.js";
import { openSqliteStore } from "./store.js";
import type { StoreData } from "./sync-store.js";

const SECRET = "correct horse battery staple, long enough";
/** The compiled worker (`npm run build`, as `npm test` does first): vitest runs sources, not dist/. */
const BUILT_WORKER = new URL("../../dist/plugins/store-sqlite/integrity-worker.js", import.meta.url);

const homes: string[] = [];
function tempHome(): string {
  const home = mkdtempSync(join(tmpdir(), "spar-corrupt-"));
  homes.push(home);
  return home;
}
afterAll(() => {
  for (const home of homes) rmSync(home, { recursive: true, force: true });
});

function recordingLog(): Logger & { lines: string[] } {
  const lines: string[] = [];
  return {
    lines,
    info: () => undefined,
    warn: (message) => lines.push(`warn ${message}`),
    error: (message) => lines.push(`error ${message}`),
  };
}

const NO_CHECK: RunningCheck = {
  outcome: new Promise(() => undefined),
  ref: () => undefined,
  stop: () => undefined,
};

/** Nothing is ever written (every call throws first), so nothing is flushed or committed. */
const NO_WRITES = {
  sync: createGroupSync({ flush: async () => undefined, close: async () => undefined }),
  db: { prepare: () => ({ run: () => undefined }), inTransaction: false },
  changes: () => 0,
  reads: new Set<string>(),
  deferred: new Set<string>(),
};

/** A data layer whose every method throws `err`: the translation is all that is under test. */
function throwing(err: unknown): StoreData {
  const fail = () => {
    throw err;
  };
  return {
    nonces: { claim: fail },
    fighters: { list: fail },
    close: () => undefined,
  } as unknown as StoreData;
}

/** What `call` rejected with; a call that throws instead of returning a promise fails the test. */
async function rejection(call: () => Promise<unknown>): Promise<unknown> {
  let promise: Promise<unknown>;
  try {
    promise = call();
  } catch (err) {
    throw new Error(`threw instead of rejecting: ${String(err)}`);
  }
  return promise.then(
    () => {
      throw new Error("expected a rejection");
    },
    (err: unknown) => err,
  );
}

describe("guardStore: corruption becomes STORE_CORRUPT", () => {
  const dbPath = "/data/spar.db";

  it.each(["SQLITE_CORRUPT", "SQLITE_CORRUPT_INDEX", "SQLITE_NOTADB"])(
    "translates %s into a 503 naming the file and the way back",
    async (code) => {
      const log = recordingLog();
      const store = guardStore(throwing(new Database.SqliteError("database disk image is malformed", code)), {
        dbPath,
        log,
        check: NO_CHECK,
        durability: NO_WRITES,
      });
      expect(store.health()).toEqual({ status: "ok" });
      const err = await rejection(() => store.nonces.claim("cli", "n", 2, 1));
      expect(err).toBeInstanceOf(SparError);
      expect(err).toMatchObject({ code: "STORE_CORRUPT", status: 503 });
      const message = (err as Error).message;
      expect(message).toContain("the database /data/spar.db is damaged (database disk image is malformed)");
      expect(message).toContain("stop the daemon (spar stop)");
      expect(message).toContain(
        "restore spar.db and spar.db.salt from a backup (the master key stays as it is)",
      );
      expect((err as Error).cause).toBeInstanceOf(Database.SqliteError);

      // Remembered: health says so from now on, and the log has said it once, however many calls fail.
      expect(store.health()).toEqual({ status: "corrupt", detail: message });
      expect(await rejection(() => store.fighters.list())).toMatchObject({ code: "STORE_CORRUPT" });
      expect(log.lines).toEqual([`error ${message}`]);
    },
  );

  it("lets every other error through untouched, as a rejection, and stays healthy", async () => {
    const conflict = new SparError("CONFLICT", "a fighter named ada already exists");
    const busy = new Database.SqliteError("database is locked", "SQLITE_BUSY");
    for (const err of [conflict, busy, new TypeError("bad")]) {
      const store = guardStore(throwing(err), {
        dbPath,
        log: recordingLog(),
        check: NO_CHECK,
        durability: NO_WRITES,
      });
      expect(await rejection(() => store.fighters.list())).toBe(err);
      expect(store.health().status).toBe("ok");
    }
  });

  it("marks the store corrupt when the integrity check finds damage, without a call", async () => {
    const log = recordingLog();
    const check: RunningCheck = {
      outcome: Promise.resolve({
        status: "corrupt",
        reason: "Page 36: btreeInitPage() returns error code 11",
      }),
      ref: () => undefined,
      stop: () => undefined,
    };
    const store = guardStore(throwing(new Error("unused")), { dbPath, log, check, durability: NO_WRITES });
    const result = await store.integrity();
    expect(result).toMatchObject({ status: "corrupt", checked: true });
    expect(result.detail).toContain(
      "/data/spar.db is damaged (Page 36: btreeInitPage() returns error code 11)",
    );
    expect(store.health().status).toBe("corrupt");
    expect(log.lines).toHaveLength(1);
  });
});

async function corruptedHome(): Promise<{ home: string; page: number }> {
  const home = tempHome();
  const store = await openSqliteStore({ home, masterSecret: Buffer.from(SECRET) });
  await store.nonces.claim("cli", "first", 9e9, 1);
  await store.close();
  const page = await damageTablePage(home, "nonces", Buffer.from(SECRET));
  return { home, page };
}

describe("a damaged page in a real database", () => {
  let damaged: { home: string; page: number };
  let store: Store;
  const log = recordingLog();

  afterAll(async () => {
    await store?.close();
  });

  it("opens (the damage is not where opening reads) and answers STORE_CORRUPT where it is", async () => {
    damaged = await corruptedHome();
    store = await openSqliteStore(
      { home: damaged.home, masterSecret: Buffer.from(SECRET) },
      { log, integrityWorker: BUILT_WORKER },
    );
    expect(await store.fighters.list()).toEqual([]);
    const err = await rejection(() => store.nonces.claim("cli", "second", 9e9, 2));
    expect(err).toMatchObject({ code: "STORE_CORRUPT", status: 503 });
    expect((err as Error).message).toContain(`the database ${join(damaged.home, "spar.db")} is damaged`);
    expect(store.health().status).toBe("corrupt");
  });

  it("is found by the integrity check in its worker thread", async () => {
    const result = await store.integrity();
    expect(result).toMatchObject({ status: "corrupt", checked: true });
    expect(log.lines.filter((l) => l.startsWith("error "))).toHaveLength(1);
    expect(log.lines.filter((l) => l.startsWith("warn "))).toEqual([]);
  });

  it("is found by quick_check on a connection of its own", async () => {
    const key = await deriveKey(Buffer.from(SECRET), readFileSync(join(damaged.home, "spar.db.salt")));
    const literal = rawKeyLiteral(key);
    key.fill(0);
    const db = openRetained(join(damaged.home, "spar.db"), { readonly: true, fileMustExist: true });
    try {
      keyConnection(db, literal);
      expect(quickCheck(db)).toEqual({ status: "corrupt", reason: "database disk image is malformed" });
    } finally {
      literal.fill(0);
      db.close();
    }
  });
});

describe("the integrity check", () => {
  it("passes a sound database, in the worker", async () => {
    const home = tempHome();
    const log = recordingLog();
    const store = await openSqliteStore(
      { home, masterSecret: Buffer.from(SECRET) },
      { log, integrityWorker: BUILT_WORKER },
    );
    try {
      expect(await store.integrity()).toEqual({ status: "ok", checked: true });
      expect(store.health()).toEqual({ status: "ok" });
      expect(log.lines).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it("moves the key literal to the worker: nothing is left in this thread", async () => {
    const home = tempHome();
    const store = await openSqliteStore({ home, masterSecret: Buffer.from(SECRET) });
    await store.close();
    const key = await deriveKey(Buffer.from(SECRET), readFileSync(join(home, "spar.db.salt")));
    const literal = rawKeyLiteral(key);
    key.fill(0);
    const running = startIntegrityCheck(join(home, "spar.db"), literal, BUILT_WORKER);
    expect(literal.length).toBe(0); // detached: transferred, not copied
    running.ref();
    expect(await running.outcome).toEqual({ status: "ok" });
  });

  it("wipes the literal when there is no worker to hand it to", async () => {
    const literal = Buffer.from("x'00112233'");
    const running = startIntegrityCheck("/nowhere/spar.db", literal, new URL("file:///nowhere/worker.js"));
    expect(literal.every((b) => b === 0)).toBe(true);
    expect(await running.outcome).toMatchObject({ status: "unchecked" });
  });

  it("ends quietly when the store closes first", async () => {
    const { home } = await corruptedHome();
    const log = recordingLog();
    const store = await openSqliteStore(
      { home, masterSecret: Buffer.from(SECRET) },
      { log, integrityWorker: BUILT_WORKER },
    );
    await store.close();
    expect(await store.integrity()).toMatchObject({ checked: false, status: "ok" });
    expect(log.lines).toEqual([]);
  });
});
