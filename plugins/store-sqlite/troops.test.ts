/**
 * Troops and their tasks in this store, on a real encrypted database: every method and its errors,
 * that what users and fighters wrote never reaches the disk in plaintext, what survives a restart,
 * and this store's own choices (time normalization, size limits, the order of tasks created at the
 * same time). What every store must do is also in the contract suite (test/contract/store.test.ts).
 */
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type Database from "better-sqlite3-multiple-ciphers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TASK_BODY_LIMIT, TASK_TEXT_LIMIT } from "../../lib/store-checks.js";
import type { Store, TroopStep, TroopTaskRecord } from "../../sdk/index.js";
import { migrate } from "./migrations.js";
import { createSqliteStore } from "./queries.js";
import { openRetained } from "./retain.js";
import { DB_FILE, openSqliteStore } from "./store.js";
import type { StoreData } from "./sync-store.js";

const SECRET = "troops";
const TASK_MARKER = "quokka-lighthouse-4417";
const RESULT_MARKER = "narwhal-teaspoon-9052";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const noUsage = { input_tokens: 0, output_tokens: 0 };

const homes: string[] = [];
function tempHome(): string {
  const home = mkdtempSync(join(tmpdir(), "spar-troops-"));
  homes.push(home);
  return home;
}
afterAll(() => {
  for (const home of homes) rmSync(home, { recursive: true, force: true });
});

function open(home: string): Promise<Store> {
  return openSqliteStore({ home, masterSecret: Buffer.from(SECRET) });
}

/** The bytes of the database and its WAL, whichever exist. */
function dbBytes(home: string): Buffer {
  const files = [DB_FILE, `${DB_FILE}-wal`].map((f) => join(home, f)).filter((p) => existsSync(p));
  return Buffer.concat(files.map((p) => readFileSync(p)));
}

async function expectCode(promise: Promise<unknown>, code: string, message?: RegExp): Promise<void> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toMatchObject({ name: "SparError", code });
  if (message) expect((err as Error).message).toMatch(message);
}

const unique = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`;
const crew = (name = unique("crew"), strategy = "broadcast") => ({
  name,
  leader: "fighter-lead",
  members: ["fighter-a", "fighter-b"],
  strategy,
});

function step(fighterId: string, role: string, output: string | null, at: string): TroopStep {
  return {
    fighter_id: fighterId,
    role,
    input: `input for ${fighterId}`,
    output,
    error: output === null ? { code: "PROVIDER_FAILED", message: "upstream said no" } : null,
    bout_id: null,
    started_at: at,
    finished_at: at,
    usage: { input_tokens: 10, output_tokens: 5 },
  };
}

describe("store-sqlite troops", () => {
  const home = tempHome();
  let store: Store;
  beforeAll(async () => {
    store = await open(home);
  });
  afterAll(async () => {
    await store.close();
  });

  it("creates a troop, finds it by id and by name, lists troops by name", async () => {
    const zed = await store.troops.create(crew("zed-crew", "pipeline"));
    expect(zed).toEqual({
      id: expect.stringMatching(UUID),
      name: "zed-crew",
      leader: "fighter-lead",
      members: ["fighter-a", "fighter-b"],
      strategy: "pipeline",
      created_at: expect.any(String),
    });
    expect(new Date(zed.created_at).toISOString()).toBe(zed.created_at);
    expect(await store.troops.get(zed.id)).toEqual(zed);
    expect(await store.troops.get("zed-crew")).toEqual(zed);
    expect(await store.troops.get("no-such-crew")).toBeUndefined();

    const abe = await store.troops.create(crew("abe-crew"));
    const names = (await store.troops.list()).map((t) => t.name);
    expect(names.indexOf("abe-crew")).toBeLessThan(names.indexOf("zed-crew"));
    expect(names).toEqual([...names].sort());
    // An id wins over a name that happens to be that id.
    const impostor = await store.troops.create(crew(abe.id));
    expect(await store.troops.get(abe.id)).toEqual(abe);
    expect(await store.troops.remove(impostor.id)).toBe(true);
  });

  it("refuses a taken name (CONFLICT) and a troop it cannot keep (VALIDATION_FAILED)", async () => {
    const name = unique("dup");
    await store.troops.create(crew(name));
    await expectCode(
      store.troops.create(crew(name)),
      "CONFLICT",
      new RegExp(`a troop named ${name} already exists`),
    );
    await expectCode(store.troops.create(crew("")), "VALIDATION_FAILED", /name/);
    await expectCode(store.troops.create({ ...crew(), leader: "" }), "VALIDATION_FAILED", /leader/);
    await expectCode(
      store.troops.create({ ...crew(), members: "fighter-a" as unknown as string[] }),
      "VALIDATION_FAILED",
      /members/,
    );
    await expectCode(
      store.troops.create({ ...crew(), members: ["a", ""] }),
      "VALIDATION_FAILED",
      /members\[1\]/,
    );
    await expectCode(store.troops.create({ ...crew(), strategy: "" }), "VALIDATION_FAILED", /strategy/);
    expect((await store.troops.list()).filter((t) => t.name === name)).toHaveLength(1);
  });

  it("rotates from 0, one step per call, also for calls made at once (TROOP_NOT_FOUND for none)", async () => {
    const troop = await store.troops.create(crew());
    expect(await store.troops.rotate(troop.id)).toBe(0);
    expect(await store.troops.rotate(troop.id)).toBe(1);
    const together = await Promise.all([1, 2, 3, 4].map(() => store.troops.rotate(troop.id)));
    expect([...together].sort()).toEqual([2, 3, 4, 5]);
    await expectCode(store.troops.rotate(randomUUID()), "TROOP_NOT_FOUND");
    // By id only: a name is not an id.
    await expectCode(store.troops.rotate(troop.name), "TROOP_NOT_FOUND");
  });

  it("creates a task pending, with nothing done yet (TROOP_NOT_FOUND for an unknown troop)", async () => {
    const troop = await store.troops.create(crew());
    const task = await store.troops.tasks.create({
      troop_id: troop.id,
      task: "Plan a picnic",
      strategy: "broadcast",
    });
    expect(task).toEqual({
      id: expect.stringMatching(UUID),
      troop_id: troop.id,
      task: "Plan a picnic",
      strategy: "broadcast",
      status: "pending",
      result: null,
      steps: [],
      error: null,
      partial: false,
      usage: noUsage,
      created_at: expect.any(String),
      started_at: null,
      finished_at: null,
    });
    expect(await store.troops.tasks.get(task.id)).toEqual(task);
    expect(await store.troops.tasks.get(randomUUID())).toBeUndefined();
    await expectCode(
      store.troops.tasks.create({ troop_id: randomUUID(), task: "orphan", strategy: "broadcast" }),
      "TROOP_NOT_FOUND",
    );
    await expectCode(
      store.troops.tasks.create({ troop_id: troop.id, task: "", strategy: "broadcast" }),
      "VALIDATION_FAILED",
    );
    await expectCode(
      store.troops.tasks.create({ troop_id: troop.id, task: "x", strategy: "" }),
      "VALIDATION_FAILED",
    );
    expect(await store.troops.tasks.list(troop.id, { limit: 10 })).toEqual([task]);
  });

  it("saves a task's state as it stands, times normalized, keeping its text, strategy, troop and creation", async () => {
    const troop = await store.troops.create(crew(unique("voters"), "consensus"));
    const task = await store.troops.tasks.create({
      troop_id: troop.id,
      task: "Pick a name",
      strategy: "consensus",
    });
    const running: TroopTaskRecord = { ...task, status: "running", started_at: "2026-03-01T10:00:00Z" };
    await store.troops.tasks.save(running);
    expect(await store.troops.tasks.get(task.id)).toEqual({
      ...running,
      started_at: "2026-03-01T10:00:00.000Z",
    });

    const done: TroopTaskRecord = {
      ...running,
      // The record's identity and text are not the save's to change.
      task: "something else",
      strategy: "pipeline",
      troop_id: randomUUID(),
      created_at: "2020-01-01T00:00:00.000Z",
      status: "completed",
      result: "Call it Fern.",
      steps: [
        step("fighter-a", "answer", "Fern", "2026-03-01T10:00:01.000Z"),
        step("fighter-b", "answer", null, "2026-03-01T10:00:02.000Z"),
        step("fighter-a", "vote", '{"choice":0}', "2026-03-01T10:00:03.000Z"),
      ],
      votes: [
        { fighter_id: "fighter-a", choice: 0, reason: "short" },
        { fighter_id: "fighter-b", choice: null, error: "no valid vote after a retry" },
        { fighter_id: "fighter-lead", choice: 0, tie_break: true },
      ],
      reason: {
        chosen: "fighter-a",
        text: "fighter-a knows names",
        scores: [{ fighter_id: "fighter-a", score: 3, matched: ["name"] }],
      },
      error: { code: "STRATEGY_PARTIAL", message: "one member failed" },
      partial: true,
      usage: { input_tokens: 30, output_tokens: 15 },
      started_at: "2026-03-01T10:00:00.000Z",
      finished_at: "2026-03-01T11:00:00+01:00",
    };
    await store.troops.tasks.save(done);
    expect(await store.troops.tasks.get(task.id)).toEqual({
      ...done,
      task: task.task,
      strategy: task.strategy,
      troop_id: task.troop_id,
      created_at: task.created_at,
      finished_at: "2026-03-01T10:00:00.000Z",
    });

    // Votes and reason are optional: a save without them leaves none.
    const { votes: _votes, reason: _reason, ...plain } = done;
    await store.troops.tasks.save(plain);
    const saved = await store.troops.tasks.get(task.id);
    expect(saved).not.toHaveProperty("votes");
    expect(saved).not.toHaveProperty("reason");
    expect(saved?.error).toEqual(done.error);
  });

  it("refuses a state it cannot keep, leaving the task as it was, and a task that is gone (NOT_FOUND)", async () => {
    const troop = await store.troops.create(crew());
    const task = await store.troops.tasks.create({
      troop_id: troop.id,
      task: "Refuse me",
      strategy: "broadcast",
    });
    const bad: [Partial<TroopTaskRecord> | Record<string, unknown>, RegExp][] = [
      [{ status: "exploded" }, /status/],
      [{ steps: "none" }, /steps/],
      [{ votes: {} }, /votes/],
      [{ reason: "because" }, /reason/],
      [{ result: 42 }, /result/],
      [{ partial: "yes" }, /partial/],
      [{ error: { code: "X" } }, /error/],
      [{ usage: { input_tokens: -1, output_tokens: 0 } }, /usage\.input_tokens/],
      [{ started_at: "soon" }, /started_at/],
      [{ finished_at: "later" }, /finished_at/],
    ];
    for (const [change, message] of bad) {
      await expectCode(
        store.troops.tasks.save({ ...task, status: "running", ...change } as TroopTaskRecord),
        "VALIDATION_FAILED",
        message,
      );
    }
    expect(await store.troops.tasks.get(task.id)).toEqual(task);
    await expectCode(store.troops.tasks.save({ ...task, id: randomUUID() }), "NOT_FOUND");
  });

  it("keeps large tasks and bodies, and refuses (not cuts) what is past its limits", async () => {
    const troop = await store.troops.create(crew());
    const text = `${TASK_MARKER} ${"é".repeat(99_000)}`; // within the API's 100,000 characters
    const task = await store.troops.tasks.create({ troop_id: troop.id, task: text, strategy: "broadcast" });
    expect((await store.troops.tasks.get(task.id))?.task).toBe(text);

    const output = "word ".repeat(200_000); // 1 MB a step
    const big = {
      ...task,
      steps: [1, 2, 3].map((n) => step(`fighter-${n}`, "answer", output, task.created_at)),
    };
    await store.troops.tasks.save(big);
    expect(await store.troops.tasks.get(task.id)).toEqual(big);

    const huge = { ...big, result: "x".repeat(TASK_BODY_LIMIT) };
    await expectCode(store.troops.tasks.save(huge), "VALIDATION_FAILED", /bytes as JSON/);
    const cyclic = { ...big, reason: { chosen: "a", text: "t", scores: [] } as Record<string, unknown> };
    cyclic.reason = { ...cyclic.reason, self: cyclic };
    await expectCode(
      store.troops.tasks.save(cyclic as unknown as TroopTaskRecord),
      "VALIDATION_FAILED",
      /JSON/,
    );
    expect(await store.troops.tasks.get(task.id)).toEqual(big);

    await expectCode(
      store.troops.tasks.create({
        troop_id: troop.id,
        task: "a".repeat(TASK_TEXT_LIMIT + 1),
        strategy: "broadcast",
      }),
      "VALIDATION_FAILED",
      /bytes of UTF-8/,
    );
  });

  it("lists a troop's tasks newest first, a page at a time after a task id", async () => {
    const [troop, other] = [await store.troops.create(crew()), await store.troops.create(crew())];
    const made: TroopTaskRecord[] = [];
    for (const n of [1, 2, 3, 4, 5]) {
      made.push(
        await store.troops.tasks.create({ troop_id: troop.id, task: `task ${n}`, strategy: "broadcast" }),
      );
    }
    const theirs = await store.troops.tasks.create({
      troop_id: other.id,
      task: "theirs",
      strategy: "broadcast",
    });
    const ids = (tasks: TroopTaskRecord[]) => tasks.map((t) => t.task);

    expect(ids(await store.troops.tasks.list(troop.id, { limit: 10 }))).toEqual([
      "task 5",
      "task 4",
      "task 3",
      "task 2",
      "task 1",
    ]);
    const page1 = await store.troops.tasks.list(troop.id, { limit: 2 });
    expect(page1).toEqual([made[4], made[3]]);
    expect(ids(await store.troops.tasks.list(troop.id, { limit: 2, before: made[3]?.id }))).toEqual([
      "task 3",
      "task 2",
    ]);
    expect(ids(await store.troops.tasks.list(troop.id, { limit: 2, before: made[1]?.id }))).toEqual([
      "task 1",
    ]);
    expect(await store.troops.tasks.list(troop.id, { limit: 2, before: made[0]?.id })).toEqual([]);
    expect(await store.troops.tasks.list(randomUUID(), { limit: 2 })).toEqual([]);

    await expectCode(store.troops.tasks.list(troop.id, { limit: 2, before: theirs.id }), "NOT_FOUND");
    await expectCode(store.troops.tasks.list(troop.id, { limit: 2, before: randomUUID() }), "NOT_FOUND");
    await expectCode(store.troops.tasks.list(troop.id, { limit: 0 }), "VALIDATION_FAILED");
    await expectCode(store.troops.tasks.list(troop.id, { limit: 1.5 }), "VALIDATION_FAILED");
  });

  it("removes a troop with its tasks, and frees its name", async () => {
    const troop = await store.troops.create(crew());
    const keep = await store.troops.create(crew());
    const tasks = [
      await store.troops.tasks.create({ troop_id: troop.id, task: "one", strategy: "broadcast" }),
      await store.troops.tasks.create({ troop_id: troop.id, task: "two", strategy: "broadcast" }),
    ];
    const kept = await store.troops.tasks.create({ troop_id: keep.id, task: "kept", strategy: "broadcast" });

    expect(await store.troops.remove(troop.id)).toBe(true);
    expect(await store.troops.get(troop.id)).toBeUndefined();
    for (const task of tasks) expect(await store.troops.tasks.get(task.id)).toBeUndefined();
    expect(await store.troops.tasks.list(troop.id, { limit: 10 })).toEqual([]);
    await expectCode(
      store.troops.tasks.save({ ...(tasks[0] as TroopTaskRecord), status: "running" }),
      "NOT_FOUND",
    );
    await expectCode(store.troops.rotate(troop.id), "TROOP_NOT_FOUND");
    expect(await store.troops.remove(troop.id)).toBe(false);
    expect(await store.troops.tasks.get(kept.id)).toEqual(kept);

    const again = await store.troops.create(crew(troop.name));
    expect(again.id).not.toBe(troop.id);
    expect(await store.troops.rotate(again.id)).toBe(0);
  });
});

describe("store-sqlite troops across a restart", () => {
  const home = tempHome();
  const name = unique("night-shift");
  const error = { code: "TASK_ABANDONED", message: "daemon restarted" };
  let troopId = "";
  let tasks: Record<"pending" | "running" | "completed", TroopTaskRecord>;

  it("never writes a task's text or a fighter's words to disk in plaintext", async () => {
    const store = await open(home);
    const troop = await store.troops.create(crew(name, "round_robin"));
    troopId = troop.id;
    expect(await store.troops.rotate(troop.id)).toBe(0);
    expect(await store.troops.rotate(troop.id)).toBe(1);
    const create = (task: string) =>
      store.troops.tasks.create({ troop_id: troop.id, task, strategy: "round_robin" });
    const pending = await create(`later: ${TASK_MARKER}`);
    const running = await create(`now: ${TASK_MARKER}`);
    const completed = await create(`done: ${TASK_MARKER}`);
    const at = "2026-03-02T09:00:00.000Z";
    tasks = {
      pending,
      running: {
        ...running,
        status: "running",
        started_at: at,
        steps: [step("fighter-a", "answer", null, at)],
      },
      completed: {
        ...completed,
        status: "completed",
        result: RESULT_MARKER,
        steps: [step("fighter-b", "answer", RESULT_MARKER, at)],
        usage: { input_tokens: 10, output_tokens: 5 },
        started_at: at,
        finished_at: at,
      },
    };
    await store.troops.tasks.save(tasks.running);
    await store.troops.tasks.save(tasks.completed);

    // The WAL is live while the store is open: neither file may hold the plaintext.
    for (const marker of [TASK_MARKER, RESULT_MARKER, name, "troop_tasks"]) {
      expect(dbBytes(home).includes(marker)).toBe(false);
    }
    await store.close();
    const bytes = dbBytes(home);
    expect(bytes.length).toBeGreaterThan(0);
    for (const marker of [TASK_MARKER, RESULT_MARKER, name, "troop_tasks"])
      expect(bytes.includes(marker)).toBe(false);
  });

  it("keeps troops, tasks and the rotation; abandon fails what was pending or running", async () => {
    const store = await open(home);
    try {
      expect(await store.troops.get(name)).toMatchObject({ id: troopId, strategy: "round_robin" });
      expect(await store.troops.tasks.list(troopId, { limit: 10 })).toEqual([
        tasks.completed,
        tasks.running,
        tasks.pending,
      ]);
      // The rotation goes on where it was.
      expect(await store.troops.rotate(troopId)).toBe(2);

      const now = "2026-03-03T08:00:00Z";
      expect(await store.troops.tasks.abandon(error, now)).toBe(2);
      for (const left of [tasks.pending, tasks.running]) {
        expect(await store.troops.tasks.get(left.id)).toEqual({
          ...left,
          status: "failed",
          error,
          finished_at: "2026-03-03T08:00:00.000Z",
        });
      }
      expect(await store.troops.tasks.get(tasks.completed.id)).toEqual(tasks.completed);
      expect(await store.troops.tasks.abandon(error, now)).toBe(0);
      await expectCode(store.troops.tasks.abandon(error, "not a time"), "VALIDATION_FAILED");
      await expectCode(
        store.troops.tasks.abandon(null as unknown as typeof error, now),
        "VALIDATION_FAILED",
        /error/,
      );
    } finally {
      await store.close();
    }
  });
});

// Tasks made in the same millisecond (after a clock step back, say) cannot be arranged through the
// Store, whose clock never repeats; the data layer over a plain connection lets the test set times.
describe("store-sqlite troops: tasks created at the same time", () => {
  let home = "";
  let db: Database.Database;
  let data: StoreData;
  beforeAll(() => {
    home = tempHome();
    const path = join(home, "spar.db");
    db = openRetained(path, {});
    db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON");
    migrate(db, path);
    data = createSqliteStore(db);
  });
  afterAll(() => data.close());

  it("lists the later created first, and pages through them without skipping or repeating", () => {
    const troop = data.troops.create(crew());
    const made = [1, 2, 3, 4].map((n) =>
      data.troops.tasks.create({ troop_id: troop.id, task: `same ${n}`, strategy: "broadcast" }),
    );
    db.prepare("UPDATE troop_tasks SET created_at = '2026-03-01T00:00:00.000Z' WHERE troop_id = ?").run(
      troop.id,
    );
    const texts = (tasks: TroopTaskRecord[]) => tasks.map((t) => t.task);
    expect(texts(data.troops.tasks.list(troop.id, { limit: 10 }))).toEqual([
      "same 4",
      "same 3",
      "same 2",
      "same 1",
    ]);
    expect(texts(data.troops.tasks.list(troop.id, { limit: 2, before: made[2]?.id }))).toEqual([
      "same 2",
      "same 1",
    ]);
    expect(texts(data.troops.tasks.list(troop.id, { limit: 1, before: made[1]?.id }))).toEqual(["same 1"]);
  });
});
