/**
 * Group commit: a write resolves once a flush that started after it has finished; concurrent writes
 * share flushes; a turn's own writes wait for nobody until `durable()`. The last part runs the real
 * store and counts the fdatasync calls on its WAL file.
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { open } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3-multiple-ciphers";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import type { FighterRow } from "../../sdk/index.js";
import { gorillaRecordsOver } from "../../test/helpers/gorilla-records.js";
import { createGroupSync, createWriteBatch } from "./durability.js";
import { openRetained } from "./retain.js";
import { openSqliteStore } from "./store.js";

/** A flush that finishes when the test says so, counting how often it was started. */
function manualFlush() {
  const started: { finish(): void; fail(err: Error): void }[] = [];
  return {
    started,
    flush: () =>
      new Promise<void>((resolve, reject) => {
        started.push({ finish: resolve, fail: reject });
      }),
    close: async () => undefined,
  };
}

const tick = () => new Promise((r) => setImmediate(r));

const settled = async <T>(promise: Promise<T>) => {
  let state = "pending";
  promise.then(
    () => {
      state = "resolved";
    },
    () => {
      state = "rejected";
    },
  );
  await new Promise((r) => setImmediate(r));
  return state;
};

describe("createGroupSync", () => {
  it("resolves at once when nothing was written, without flushing", async () => {
    const target = manualFlush();
    const sync = createGroupSync(target);
    await sync.durable();
    expect(target.started).toHaveLength(0);
  });

  it("makes one flush serve every write made before it started", async () => {
    const target = manualFlush();
    const sync = createGroupSync(target);
    const waits = Array.from({ length: 20 }, () => {
      sync.wrote();
      return sync.durable();
    });
    await tick();
    expect(target.started).toHaveLength(1);
    expect(await settled(waits[0] as Promise<void>)).toBe("pending");
    target.started[0]?.finish();
    await Promise.all(waits);
    expect(target.started).toHaveLength(1);
  });

  it("holds a write made during a flush for the next one, which then covers all that came meanwhile", async () => {
    const target = manualFlush();
    const sync = createGroupSync(target);
    sync.wrote();
    const first = sync.durable();
    await tick();
    sync.wrote(); // committed after the flush started: that flush may not cover it
    const second = sync.durable();
    sync.wrote();
    const third = sync.durable();
    target.started[0]?.finish();
    await first;
    expect(await settled(second)).toBe("pending");
    await tick();
    expect(target.started).toHaveLength(2);
    target.started[1]?.finish();
    await Promise.all([second, third]);
    expect(target.started).toHaveLength(2);
  });

  it("fails the writes a failed flush was for, and tries again for the next", async () => {
    const target = manualFlush();
    const sync = createGroupSync(target);
    sync.wrote();
    const lost = sync.durable();
    await tick();
    target.started[0]?.fail(new Error("EIO"));
    await expect(lost).rejects.toThrow("EIO");
    const retried = sync.durable();
    await tick();
    expect(target.started).toHaveLength(2);
    target.started[1]?.finish();
    await retried;
  });
});

describe("createWriteBatch", () => {
  function setup() {
    const db = openRetained(":memory:", {});
    db.exec("CREATE TABLE t (k TEXT PRIMARY KEY)");
    const prepare = db.prepare.bind(db);
    let commits = 0;
    const counting = {
      get inTransaction() {
        return db.inTransaction;
      },
      prepare(sql: string) {
        const statement = prepare(sql);
        if (sql !== "COMMIT") return statement;
        return {
          run: () => {
            commits += 1;
            return statement.run();
          },
        };
      },
    };
    let announced = 0;
    const batch = createWriteBatch(counting, { committed: () => (announced += 1), translate: (e) => e });
    const insert = db.prepare<[string], void>("INSERT INTO t (k) VALUES (?)");
    const keys = () => db.prepare<[], string>("SELECT k FROM t ORDER BY k").pluck().all();
    return { batch, insert, keys, commits: () => commits, announced: () => announced };
  }

  it("puts the writes of one turn of the event loop in one transaction, committed when it moves on", async () => {
    const { batch, insert, keys, commits, announced } = setup();
    for (const k of ["a", "b", "c"]) batch.run(() => insert.run(k));
    expect(batch.open).toBe(true);
    expect(keys()).toEqual(["a", "b", "c"]); // visible on the connection at once
    expect(commits()).toBe(0);
    await batch.committed();
    expect([commits(), announced(), batch.open]).toEqual([1, 1, false]);
    batch.run(() => insert.run("d"));
    await batch.committed();
    expect(commits()).toBe(2);
  });

  it("a failing write undoes only itself; the batch still commits the others", async () => {
    const { batch, insert, keys } = setup();
    batch.run(() => insert.run("a"));
    expect(() => batch.run(() => insert.run("a"))).toThrow(Database.SqliteError);
    batch.run(() => insert.run("b"));
    await batch.committed();
    expect(keys()).toEqual(["a", "b"]);
  });
});

describe("store-sqlite: writes wait for the WAL's fdatasync", async () => {
  const home = mkdtempSync(join(tmpdir(), "spar-durability-"));
  afterEach(() => vi.restoreAllMocks());
  // Every FileHandle shares one prototype: spying on it sees the store's WAL handle.
  const probe = await open(join(home, "probe"), "w");
  const FileHandle = Object.getPrototypeOf(probe) as { datasync(): Promise<void> };
  await probe.close();

  const store = await openSqliteStore({ home, masterSecret: Buffer.from("x".repeat(40)) });
  afterAll(async () => {
    await store.close();
    rmSync(home, { recursive: true, force: true });
  });
  const fighter: FighterRow = {
    id: randomUUID(),
    name: "dur",
    manifest: { name: "dur", description: "", system_prompt: "" },
    created_at: new Date().toISOString(),
  };
  await store.fighters.insert(fighter);
  /** Another fighter to insert: a plain write. */
  const other = (name: string): FighterRow => ({ ...fighter, id: randomUUID(), name });

  it("a plain write resolves after a flush; a read flushes nothing", async () => {
    const datasync = vi.spyOn(FileHandle, "datasync");
    await store.fighters.list();
    expect(datasync).not.toHaveBeenCalled();
    await store.fighters.insert(other("dur-1"));
    expect(datasync).toHaveBeenCalledTimes(1);
  });

  it("a turn's writes commit without a flush, and durable() flushes them once", async () => {
    const datasync = vi.spyOn(FileHandle, "datasync");
    const { turn } = await store.turns.begin({
      fighter_id: fighter.id,
      user: { role: "user", content: "hi" },
    });
    await store.turns.append(turn.id, [{ role: "assistant", content: "step" }]);
    await store.turns.finish(turn.id, {
      status: "completed",
      messages: [{ role: "assistant", content: "end" }],
      usage: { input_tokens: 1, output_tokens: 1 },
      iterations: 1,
    });
    expect(datasync).not.toHaveBeenCalled();
    await store.durable();
    expect(datasync).toHaveBeenCalledTimes(1);
    await store.durable();
    expect(datasync).toHaveBeenCalledTimes(1);
  });

  it("a write refused in a batch fails alone: the others in its turn of the loop are kept", async () => {
    const twin = { ...fighter, id: randomUUID() }; // same name: CONFLICT
    const results = await Promise.allSettled([
      store.fighters.insert(other("kept-1")),
      store.fighters.insert(twin),
      store.fighters.insert(other("kept-2")),
    ]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(results[1]).toMatchObject({ reason: { code: "CONFLICT" } });
    expect((await store.fighters.getByName("kept-1"))?.name).toBe("kept-1");
    expect((await store.fighters.getByName("kept-2"))?.name).toBe("kept-2");
  });

  it("a gorilla's writes through its plugin's collections resolve after a flush; its reads flush nothing", async () => {
    const gorillas = gorillaRecordsOver(store);
    // The collections are made (their indexes) on first use: a write of its own. A transaction makes
    // every collection of the plugin's (the budget cages too) before it starts: one goes first.
    await gorillas.state("dur-gorilla");
    await gorillas.runs.get("none");
    await gorillas.setDesired("warm-up", "caged");
    const datasync = vi.spyOn(FileHandle, "datasync");
    await gorillas.setDesired("dur-gorilla", "unleashed");
    expect(datasync).toHaveBeenCalledTimes(1);
    const run = await gorillas.runs.begin({ gorilla: "dur-gorilla", trigger: "manual" });
    expect(datasync).toHaveBeenCalledTimes(2);
    // Transactions made together take turns on the connection, but share a flush.
    await Promise.all([
      gorillas.runs.finish(run.id, { outcome: "ok", usage: { input_tokens: 1, output_tokens: 1 } }),
      gorillas.recordFire("dur-gorilla", new Date().toISOString()),
    ]);
    expect(datasync).toHaveBeenCalledTimes(3);
    await gorillas.state("dur-gorilla");
    await gorillas.states();
    await gorillas.runs.get(run.id);
    await gorillas.runs.list("dur-gorilla", { limit: 5 });
    expect(datasync).toHaveBeenCalledTimes(3);
  });

  it("concurrent writes share flushes", async () => {
    const datasync = vi.spyOn(FileHandle, "datasync");
    await Promise.all(Array.from({ length: 50 }, (_, i) => store.fighters.insert(other(`f${i}`))));
    expect(datasync).toHaveBeenCalledTimes(1);
  });
});
