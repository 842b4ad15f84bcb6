/**
 * Troops and their tasks in troops-local's own collections, through `api.data` over each store plugin
 * (store-sqlite; store-postgres when SPAR_TEST_DATABASE_URL is set): every method and its errors,
 * what survives a restart, the rotation held across two daemons' stores, and that what users and
 * fighters wrote never reaches the disk (or a dump) in plaintext.
 */
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPluginData, type DataDeclaration, type Store } from "../../sdk/index.js";
import type { TroopStep, TroopTaskRecord } from "../../sdk/kits/troops.js";
import { dropSchemas, SKIP_REASON, schemaForHome, TEST_DATABASE_URL } from "../../test/helpers/postgres.js";
import { openPostgresStore } from "../store-postgres/store.js";
import { DB_FILE, openSqliteStore } from "../store-sqlite/store.js";
import { TASK_BODY_LIMIT, TASK_TEXT_LIMIT } from "./checks.js";
import { createTroopData, type TroopData } from "./troop-data.js";

const MANIFEST = JSON.parse(readFileSync(new URL("./plugin.json", import.meta.url), "utf8")) as {
  data: DataDeclaration;
};
const SECRET = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
const TASK_MARKER = "quokka-lighthouse-4417";
const RESULT_MARKER = "narwhal-teaspoon-9052";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const noUsage = { input_tokens: 0, output_tokens: 0 };

interface Backend {
  name: string;
  skip?: string;
  /** Opens the store kept under `home` (a fresh directory, or one opened and closed before). */
  open(home: string): Promise<Store>;
  /** Everything the store wrote about `home`, as text: the place plaintext must not be. */
  bytes(home: string): Promise<string>;
  /** Whether names are sealed too (SQLCipher encrypts the whole file; PostgreSQL kept troop names plain). */
  sealsNames: boolean;
}

const schemas = new Set<string>();
const BACKENDS: Backend[] = [
  {
    name: "store-sqlite",
    open: (home) => openSqliteStore({ home, masterSecret: Buffer.from(SECRET) }),
    sealsNames: true,
    bytes: async (home) => {
      const files = [DB_FILE, `${DB_FILE}-wal`].map((f) => join(home, f)).filter((p) => existsSync(p));
      return Buffer.concat(files.map((p) => readFileSync(p))).toString("latin1");
    },
  },
  {
    name: "store-postgres",
    ...(TEST_DATABASE_URL ? {} : { skip: SKIP_REASON }),
    open: (home) => {
      const schema = schemaForHome(home);
      schemas.add(schema);
      return openPostgresStore(
        { home, masterSecret: Buffer.from(SECRET) },
        { url: TEST_DATABASE_URL ?? "", schema, poolMax: 4 },
      );
    },
    bytes: (home) => dump(schemaForHome(home)),
    sealsNames: false,
  },
];

/** Every row of every table in `schema`, as JSON text (bytea shows as \x hex). */
async function dump(schema: string): Promise<string> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    const tables = await client.query<{ table_name: string }>(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = $1",
      [schema],
    );
    const lines: string[] = [];
    for (const { table_name } of tables.rows) {
      const rows = await client.query<{ row: string }>(
        `SELECT row_to_json(dumped)::text AS row FROM "${schema}"."${table_name}" dumped`,
      );
      lines.push(...rows.rows.map((r) => r.row));
    }
    return lines.join("\n");
  } finally {
    await client.end();
  }
}

const homes: string[] = [];
function tempHome(): string {
  const home = mkdtempSync(join(tmpdir(), "spar-troop-data-"));
  homes.push(home);
  return home;
}
afterAll(async () => {
  for (const home of homes) rmSync(home, { recursive: true, force: true });
  if (TEST_DATABASE_URL) await dropSchemas(TEST_DATABASE_URL, schemas);
});

/** troops-local's data layer over `store`, as the plugin host builds its `api.data`. */
function troopsOf(store: Store): TroopData {
  return createTroopData(
    createPluginData({ plugin: "troops-local", data: MANIFEST.data, store: () => store.collections }),
  );
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

for (const backend of BACKENDS) {
  describe.skipIf(backend.skip)(
    `troops-local data on ${backend.name}${backend.skip ? ` (${backend.skip})` : ""}`,
    () => {
      describe("troops and tasks", () => {
        let store: Store;
        let troops: TroopData;
        beforeAll(async () => {
          store = await backend.open(tempHome());
          troops = troopsOf(store);
        });
        afterAll(async () => {
          await store?.close();
        });

        it("creates a troop, finds it by id and by name, lists troops by name", async () => {
          const zed = await troops.create(crew("zed-crew", "pipeline"));
          expect(zed).toEqual({
            id: expect.stringMatching(UUID),
            name: "zed-crew",
            leader: "fighter-lead",
            members: ["fighter-a", "fighter-b"],
            strategy: "pipeline",
            created_at: expect.any(String),
          });
          expect(new Date(zed.created_at).toISOString()).toBe(zed.created_at);
          expect(await troops.get(zed.id)).toEqual(zed);
          expect(await troops.get("zed-crew")).toEqual(zed);
          expect(await troops.get("no-such-crew")).toBeUndefined();

          const abe = await troops.create(crew("abe-crew"));
          const names = (await troops.list()).map((t) => t.name);
          expect(names.indexOf("abe-crew")).toBeLessThan(names.indexOf("zed-crew"));
          expect(names).toEqual([...names].sort());
          expect((await troops.list()).filter((t) => t.id === zed.id || t.id === abe.id)).toEqual([abe, zed]);
          // An id wins over a name that happens to be that id.
          const impostor = await troops.create(crew(abe.id));
          expect(await troops.get(abe.id)).toEqual(abe);
          expect(await troops.remove(impostor.id)).toBe(true);
        });

        it("refuses a taken name (CONFLICT) and a troop it cannot keep (VALIDATION_FAILED)", async () => {
          const name = unique("dup");
          const first = await troops.create(crew(name));
          await expectCode(
            troops.create(crew(name)),
            "CONFLICT",
            new RegExp(`a troop named ${name} already exists`),
          );
          await expectCode(troops.create(crew("")), "VALIDATION_FAILED", /name/);
          await expectCode(troops.create({ ...crew(), leader: "" }), "VALIDATION_FAILED", /leader/);
          await expectCode(
            troops.create({ ...crew(), members: "fighter-a" as unknown as string[] }),
            "VALIDATION_FAILED",
            /members/,
          );
          await expectCode(
            troops.create({ ...crew(), members: ["a", ""] }),
            "VALIDATION_FAILED",
            /members\[1\]/,
          );
          await expectCode(troops.create({ ...crew(), strategy: "" }), "VALIDATION_FAILED", /strategy/);
          expect((await troops.list()).filter((t) => t.name === name)).toEqual([first]);
        });

        it("updates a troop's name, leader, members and strategy, keeping its id and rotation (CONFLICT, TROOP_NOT_FOUND)", async () => {
          const troop = await troops.create(crew(unique("edit")));
          const other = await troops.create(crew());
          expect(await troops.rotate(troop.id)).toBe(0);
          const renamed = `${troop.name}-new`;
          const updated = await troops.update(troop.id, { name: renamed, members: ["fighter-c"] });
          expect(updated).toEqual({ ...troop, name: renamed, members: ["fighter-c"] });
          expect(await troops.get(troop.id)).toEqual(updated);
          expect(await troops.get(renamed)).toEqual(updated);
          expect(await troops.get(troop.name)).toBeUndefined();
          const again = await troops.update(troop.id, { leader: "fighter-c", strategy: "pipeline" });
          expect(again).toEqual({ ...updated, leader: "fighter-c", strategy: "pipeline" });
          await expectCode(
            troops.update(troop.id, { name: other.name }),
            "CONFLICT",
            new RegExp(`a troop named ${other.name} already exists`),
          );
          await expectCode(troops.update(troop.id, { leader: "" }), "VALIDATION_FAILED", /leader/);
          expect(await troops.get(troop.id)).toEqual(again);
          expect(await troops.rotate(troop.id)).toBe(1);
          await expectCode(troops.update(randomUUID(), { name: "nobody-here" }), "TROOP_NOT_FOUND");
        });

        it("rotates from 0, one step per call, also for calls made at once (TROOP_NOT_FOUND for none)", async () => {
          const [one, two] = [await troops.create(crew()), await troops.create(crew())];
          expect(await troops.rotate(one.id)).toBe(0);
          expect(await troops.rotate(one.id)).toBe(1);
          expect(await troops.rotate(two.id)).toBe(0);
          const together = await Promise.all([1, 2, 3, 4].map(() => troops.rotate(one.id)));
          expect([...together].sort()).toEqual([2, 3, 4, 5]);
          await expectCode(troops.rotate(randomUUID()), "TROOP_NOT_FOUND");
          // By id only: a name is not an id.
          await expectCode(troops.rotate(one.name), "TROOP_NOT_FOUND");
          // The counter is the strategy's: the troop as shown has none.
          expect(await troops.get(one.id)).not.toHaveProperty("rotation");
        });

        it("creates a task pending, with nothing done yet (TROOP_NOT_FOUND for an unknown troop)", async () => {
          const troop = await troops.create(crew());
          const task = await troops.tasks.create({
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
          expect(await troops.tasks.get(task.id)).toEqual(task);
          expect(await troops.tasks.get(randomUUID())).toBeUndefined();
          await expectCode(
            troops.tasks.create({ troop_id: randomUUID(), task: "orphan", strategy: "broadcast" }),
            "TROOP_NOT_FOUND",
          );
          await expectCode(
            troops.tasks.create({ troop_id: troop.id, task: "", strategy: "broadcast" }),
            "VALIDATION_FAILED",
          );
          await expectCode(
            troops.tasks.create({ troop_id: troop.id, task: "x", strategy: "" }),
            "VALIDATION_FAILED",
          );
          expect(await troops.tasks.list(troop.id, { limit: 10 })).toEqual([task]);
        });

        it("saves a task's state as it stands, times normalized, keeping its text, strategy, troop and creation", async () => {
          const troop = await troops.create(crew(unique("voters"), "consensus"));
          const task = await troops.tasks.create({
            troop_id: troop.id,
            task: "Pick a name",
            strategy: "consensus",
          });
          const running: TroopTaskRecord = { ...task, status: "running", started_at: "2026-03-01T10:00:00Z" };
          await troops.tasks.save(running);
          expect(await troops.tasks.get(task.id)).toEqual({
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
          await troops.tasks.save(done);
          expect(await troops.tasks.get(task.id)).toEqual({
            ...done,
            task: task.task,
            strategy: task.strategy,
            troop_id: task.troop_id,
            created_at: task.created_at,
            finished_at: "2026-03-01T10:00:00.000Z",
          });

          // Votes and reason are optional: a save without them leaves none.
          const { votes: _votes, reason: _reason, ...plain } = done;
          await troops.tasks.save({ ...plain, status: "cancelled" });
          const saved = await troops.tasks.get(task.id);
          expect(saved).not.toHaveProperty("votes");
          expect(saved).not.toHaveProperty("reason");
          expect(saved).toMatchObject({ status: "cancelled", error: done.error, task: task.task });
          await expectCode(troops.tasks.save({ ...done, id: randomUUID() }), "NOT_FOUND");
        });

        it("refuses a state it cannot keep, leaving the task as it was, and a task that is gone (NOT_FOUND)", async () => {
          const troop = await troops.create(crew());
          const task = await troops.tasks.create({
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
              troops.tasks.save({ ...task, status: "running", ...change } as TroopTaskRecord),
              "VALIDATION_FAILED",
              message,
            );
          }
          expect(await troops.tasks.get(task.id)).toEqual(task);
          await expectCode(troops.tasks.save({ ...task, id: randomUUID() }), "NOT_FOUND");
        });

        it("keeps large tasks and bodies, and refuses (not cuts) what is past its limits", async () => {
          const troop = await troops.create(crew());
          const text = `${TASK_MARKER} ${"é".repeat(99_000)}`; // within the API's 100,000 characters
          const task = await troops.tasks.create({ troop_id: troop.id, task: text, strategy: "broadcast" });
          expect((await troops.tasks.get(task.id))?.task).toBe(text);

          const output = "word ".repeat(200_000); // 1 MB a step
          const big = {
            ...task,
            steps: [1, 2, 3].map((n) => step(`fighter-${n}`, "answer", output, task.created_at)),
          };
          await troops.tasks.save(big);
          expect(await troops.tasks.get(task.id)).toEqual(big);

          const huge = { ...big, result: "x".repeat(TASK_BODY_LIMIT) };
          await expectCode(troops.tasks.save(huge), "VALIDATION_FAILED", /bytes as JSON/);
          const cyclic = {
            ...big,
            reason: { chosen: "a", text: "t", scores: [] } as Record<string, unknown>,
          };
          cyclic.reason = { ...cyclic.reason, self: cyclic };
          await expectCode(
            troops.tasks.save(cyclic as unknown as TroopTaskRecord),
            "VALIDATION_FAILED",
            /JSON/,
          );
          expect(await troops.tasks.get(task.id)).toEqual(big);

          await expectCode(
            troops.tasks.create({
              troop_id: troop.id,
              task: "a".repeat(TASK_TEXT_LIMIT + 1),
              strategy: "broadcast",
            }),
            "VALIDATION_FAILED",
            /bytes of UTF-8/,
          );
        });

        it("lists a troop's tasks newest first, a page at a time after a task id", async () => {
          const [troop, other] = [await troops.create(crew()), await troops.create(crew())];
          const made: TroopTaskRecord[] = [];
          for (const n of [1, 2, 3, 4, 5]) {
            made.push(
              await troops.tasks.create({ troop_id: troop.id, task: `task ${n}`, strategy: "broadcast" }),
            );
          }
          const theirs = await troops.tasks.create({
            troop_id: other.id,
            task: "theirs",
            strategy: "broadcast",
          });
          const texts = (tasks: TroopTaskRecord[]) => tasks.map((t) => t.task);

          expect(texts(await troops.tasks.list(troop.id, { limit: 10 }))).toEqual([
            "task 5",
            "task 4",
            "task 3",
            "task 2",
            "task 1",
          ]);
          expect(await troops.tasks.list(troop.id, { limit: 2 })).toEqual([made[4], made[3]]);
          expect(texts(await troops.tasks.list(troop.id, { limit: 2, before: made[3]?.id }))).toEqual([
            "task 3",
            "task 2",
          ]);
          expect(texts(await troops.tasks.list(troop.id, { limit: 2, before: made[1]?.id }))).toEqual([
            "task 1",
          ]);
          expect(await troops.tasks.list(troop.id, { limit: 2, before: made[0]?.id })).toEqual([]);
          expect(await troops.tasks.list(other.id, { limit: 10 })).toEqual([theirs]);
          expect(await troops.tasks.list(randomUUID(), { limit: 2 })).toEqual([]);

          await expectCode(troops.tasks.list(troop.id, { limit: 2, before: theirs.id }), "NOT_FOUND");
          await expectCode(troops.tasks.list(troop.id, { limit: 2, before: randomUUID() }), "NOT_FOUND");
          await expectCode(troops.tasks.list(troop.id, { limit: 0 }), "VALIDATION_FAILED");
          await expectCode(troops.tasks.list(troop.id, { limit: 1.5 }), "VALIDATION_FAILED");
        });

        it("lists tasks created in the same millisecond later first, paging without skipping or repeating", async () => {
          const troop = await troops.create(crew());
          const data = createPluginData({
            plugin: "troops-local",
            data: MANIFEST.data,
            store: () => store.collections,
          });
          const at = "2026-03-01T00:00:00.000Z";
          const ids = [1, 2, 3, 4].map(() => randomUUID());
          for (const [i, id] of ids.entries()) {
            await data.tasks?.insert({
              id,
              troop_id: troop.id,
              task: `same ${i + 1}`,
              strategy: "broadcast",
              status: "pending",
              steps: [],
              partial: false,
              usage: noUsage,
              created_at: at,
            });
          }
          const texts = (tasks: TroopTaskRecord[]) => tasks.map((t) => t.task);
          expect(texts(await troops.tasks.list(troop.id, { limit: 10 }))).toEqual([
            "same 4",
            "same 3",
            "same 2",
            "same 1",
          ]);
          expect(texts(await troops.tasks.list(troop.id, { limit: 2, before: ids[2] }))).toEqual([
            "same 2",
            "same 1",
          ]);
          expect(texts(await troops.tasks.list(troop.id, { limit: 1, before: ids[1] }))).toEqual(["same 1"]);
          // A save keeps a task's place.
          const second = (await troops.tasks.get(ids[1] as string)) as TroopTaskRecord;
          await troops.tasks.save({ ...second, status: "running" });
          expect(texts(await troops.tasks.list(troop.id, { limit: 10 }))).toEqual([
            "same 4",
            "same 3",
            "same 2",
            "same 1",
          ]);
        });

        it("removes a troop with its tasks, and frees its name", async () => {
          const troop = await troops.create(crew());
          const keep = await troops.create(crew());
          const tasks = [
            await troops.tasks.create({ troop_id: troop.id, task: "one", strategy: "broadcast" }),
            await troops.tasks.create({ troop_id: troop.id, task: "two", strategy: "broadcast" }),
          ];
          const kept = await troops.tasks.create({ troop_id: keep.id, task: "kept", strategy: "broadcast" });
          expect(await troops.rotate(troop.id)).toBe(0);

          expect(await troops.remove(troop.id)).toBe(true);
          expect(await troops.get(troop.id)).toBeUndefined();
          expect(await troops.get(troop.name)).toBeUndefined();
          for (const task of tasks) expect(await troops.tasks.get(task.id)).toBeUndefined();
          expect(await troops.tasks.list(troop.id, { limit: 10 })).toEqual([]);
          await expectCode(
            troops.tasks.save({ ...(tasks[0] as TroopTaskRecord), status: "running" }),
            "NOT_FOUND",
          );
          await expectCode(troops.rotate(troop.id), "TROOP_NOT_FOUND");
          expect(await troops.remove(troop.id)).toBe(false);
          expect(await troops.get(keep.id)).toEqual(keep);
          expect(await troops.tasks.get(kept.id)).toEqual(kept);

          const again = await troops.create(crew(troop.name));
          expect(again.id).not.toBe(troop.id);
          expect(await troops.rotate(again.id)).toBe(0);
        });
      });

      describe("across a restart", () => {
        const home = tempHome();
        const name = unique("night-shift");
        const error = { code: "TASK_ABANDONED", message: "daemon restarted" };
        let troopId = "";
        let tasks: Record<"pending" | "running" | "completed", TroopTaskRecord>;

        it("never writes a task's text or a fighter's words where they can be read", async () => {
          const store = await backend.open(home);
          const troops = troopsOf(store);
          const troop = await troops.create(crew(name, "round_robin"));
          troopId = troop.id;
          expect(await troops.rotate(troop.id)).toBe(0);
          expect(await troops.rotate(troop.id)).toBe(1);
          const create = (task: string) =>
            troops.tasks.create({ troop_id: troop.id, task, strategy: "round_robin" });
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
          await troops.tasks.save(tasks.running);
          await troops.tasks.save(tasks.completed);

          // While the store is open (SQLite's WAL is live) and once it is closed.
          const markers = [TASK_MARKER, RESULT_MARKER, ...(backend.sealsNames ? [name] : [])];
          for (const marker of markers) expect(await backend.bytes(home)).not.toContain(marker);
          await store.close();
          const bytes = await backend.bytes(home);
          expect(bytes.length).toBeGreaterThan(0);
          for (const marker of markers) expect(bytes).not.toContain(marker);
        });

        it("keeps troops, tasks and the rotation; abandon fails what was pending or running", async () => {
          const store = await backend.open(home);
          try {
            const troops = troopsOf(store);
            expect(await troops.get(name)).toMatchObject({ id: troopId, strategy: "round_robin" });
            expect(await troops.tasks.list(troopId, { limit: 10 })).toEqual([
              tasks.completed,
              tasks.running,
              tasks.pending,
            ]);
            // The rotation goes on where it was.
            expect(await troops.rotate(troopId)).toBe(2);

            const now = "2026-03-03T08:00:00Z";
            expect(await troops.tasks.abandon(error, now)).toBe(2);
            for (const left of [tasks.pending, tasks.running]) {
              expect(await troops.tasks.get(left.id)).toEqual({
                ...left,
                status: "failed",
                error,
                finished_at: "2026-03-03T08:00:00.000Z",
              });
            }
            expect(await troops.tasks.get(tasks.completed.id)).toEqual(tasks.completed);
            expect(await troops.tasks.abandon(error, now)).toBe(0);
            await expectCode(troops.tasks.abandon(error, "not a time"), "VALIDATION_FAILED");
            await expectCode(
              troops.tasks.abandon(null as unknown as typeof error, now),
              "VALIDATION_FAILED",
              /error/,
            );
          } finally {
            await store.close();
          }
        });
      });
    },
  );
}

describe.skipIf(!TEST_DATABASE_URL)("troops-local data on two stores of one database", () => {
  it("advances a troop's rotation once per call from either daemon's store", async () => {
    const home = tempHome();
    const postgres = BACKENDS[1] as Backend;
    const stores = [await postgres.open(home), await postgres.open(home)] as const;
    try {
      const [a, b] = [troopsOf(stores[0]), troopsOf(stores[1])];
      const troop = await a.create(crew(unique("rot"), "round_robin"));
      const values = await Promise.all(
        Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? a : b).rotate(troop.id)),
      );
      expect([...values].sort((x, y) => x - y)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      // A name taken on one daemon is taken on the other.
      await expectCode(b.create(crew(troop.name)), "CONFLICT");
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });
});
