/**
 * Troops and tasks a Spar before troops-local's collections kept in the store's own tables
 * (`troops`, `troop_tasks`) open after the upgrade as the same records through `api.data`, in the
 * same order, with the rotation where it was, and the tables are gone. The legacy rows are written
 * as the old store code wrote them: a troop inserted then rotated, a task inserted `pending` then
 * saved with its state's columns and its JSON body.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type Database from "better-sqlite3-multiple-ciphers";
import { afterAll, describe, expect, it } from "vitest";
import { createPluginData, type DataDeclaration, type Store } from "../../sdk/index.js";
import type { TroopRecord, TroopTaskRecord } from "../../sdk/kits/troops.js";
import { dropSchemas, SKIP_REASON, schemaForHome, TEST_DATABASE_URL } from "../../test/helpers/postgres.js";
import { previousPostgres, previousSqlite } from "../../test/helpers/previous-release.js";
import { createPool } from "../store-postgres/connection.js";
import { openCipher } from "../store-postgres/keys.js";
import { openPostgresStore } from "../store-postgres/store.js";
import { deriveKey, rawKeyLiteral } from "../store-sqlite/key.js";
import { MIGRATIONS, migrate } from "../store-sqlite/migrations.js";
import { openRetained } from "../store-sqlite/retain.js";
import { DB_FILE, openSqliteStore } from "../store-sqlite/store.js";
import { createTroopData, type TroopData } from "./troop-data.js";

const MANIFEST = JSON.parse(readFileSync(new URL("./plugin.json", import.meta.url), "utf8")) as {
  data: DataDeclaration;
};
const SECRET = "troops-upgrade";

const homes: string[] = [];
const schemas = new Set<string>();
function tempHome(): string {
  const home = mkdtempSync(join(tmpdir(), "spar-troops-upgrade-"));
  homes.push(home);
  return home;
}
afterAll(async () => {
  for (const home of homes) rmSync(home, { recursive: true, force: true });
  if (TEST_DATABASE_URL) await dropSchemas(TEST_DATABASE_URL, schemas);
});

function troopsOf(store: Store): TroopData {
  return createTroopData(
    createPluginData({ plugin: "troops-local", data: MANIFEST.data, store: () => store.collections }),
  );
}

const usage = (input_tokens: number, output_tokens: number) => ({ input_tokens, output_tokens });

/** What the old store held: two troops (one rotated three times) and four tasks in every state. */
const LEGACY = (() => {
  const crew: TroopRecord = {
    id: "9b1f6c1e-0000-4000-8000-000000000001",
    name: "crew",
    leader: "f-lead",
    members: ["f-a", "f-b"],
    strategy: "round_robin",
    created_at: "2026-01-01T00:00:00.000Z",
  };
  const alpha: TroopRecord = {
    id: "9b1f6c1e-0000-4000-8000-000000000002",
    name: "alpha",
    leader: "f-a",
    members: ["f-b"],
    strategy: "consensus",
    created_at: "2026-01-02T00:00:00.000Z",
  };
  const base = (id: string, task: string, troop: TroopRecord, created_at: string): TroopTaskRecord => ({
    id: `7c2e0000-0000-4000-8000-00000000000${id}`,
    troop_id: troop.id,
    task,
    strategy: troop.strategy,
    status: "pending",
    result: null,
    steps: [],
    error: null,
    partial: false,
    usage: usage(0, 0),
    created_at,
    started_at: null,
    finished_at: null,
  });
  const step = {
    fighter_id: "f-a",
    role: "answer",
    input: "Name the cat",
    output: "Miso",
    error: null,
    bout_id: "bout-1",
    started_at: "2026-01-03T00:00:01.000Z",
    finished_at: "2026-01-03T00:00:02.000Z",
    usage: usage(4, 2),
  };
  const done: TroopTaskRecord = {
    ...base("1", "Name the cat", alpha, "2026-01-03T00:00:00.000Z"),
    status: "completed",
    result: "Miso",
    steps: [
      step,
      { ...step, fighter_id: "f-b", output: null, error: { code: "PROVIDER_FAILED", message: "no" } },
    ],
    votes: [
      { fighter_id: "f-b", choice: 0, reason: "short" },
      { fighter_id: "f-a", choice: null, error: "no valid vote" },
      { fighter_id: "f-a", choice: 0, tie_break: true },
    ],
    reason: { chosen: "f-a", text: "cats", scores: [{ fighter_id: "f-a", score: 2, matched: ["cat"] }] },
    error: { code: "STRATEGY_PARTIAL", message: "one member failed" },
    partial: true,
    usage: usage(8, 4),
    started_at: "2026-01-03T00:00:00.500Z",
    finished_at: "2026-01-03T00:00:03.000Z",
  };
  const running: TroopTaskRecord = {
    ...base("2", "Plan a picnic", crew, "2026-01-04T00:00:00.000Z"),
    status: "running",
    steps: [{ ...step, input: "Plan a picnic", output: null, finished_at: null }],
    started_at: "2026-01-04T00:00:00.100Z",
  };
  // Two made in the same millisecond: the later written is the newer.
  const pending = base("3", "Sweep the deck", crew, "2026-01-05T00:00:00.000Z");
  const queued = base("4", "Wash the cups", crew, "2026-01-05T00:00:00.000Z");
  return { troops: { crew, alpha }, rotation: 3, tasks: { done, running, pending, queued } };
})();

/** A task's state as the old save wrote it: plain columns, and the JSON body of what the fighters produced. */
function stateColumns(task: TroopTaskRecord) {
  return {
    id: task.id,
    status: task.status,
    body: JSON.stringify({
      result: task.result,
      steps: task.steps,
      ...(task.votes !== undefined ? { votes: task.votes } : {}),
      ...(task.reason !== undefined ? { reason: task.reason } : {}),
    }),
    error_code: task.error?.code ?? null,
    error_message: task.error?.message ?? null,
    partial: task.partial,
    input_tokens: task.usage.input_tokens,
    output_tokens: task.usage.output_tokens,
    started_at: task.started_at,
    finished_at: task.finished_at,
  };
}

/** What every store must show of LEGACY after the upgrade; `troops` is the upgraded store's. */
async function expectLegacyKept(troops: TroopData): Promise<void> {
  const { crew, alpha } = LEGACY.troops;
  const { done, running, pending, queued } = LEGACY.tasks;
  expect(await troops.get(crew.id)).toEqual(crew);
  expect(await troops.get("alpha")).toEqual(alpha);
  expect(await troops.list()).toEqual([alpha, crew]);
  expect(await troops.tasks.list(crew.id, { limit: 10 })).toEqual([queued, pending, running]);
  expect(await troops.tasks.list(crew.id, { limit: 1, before: pending.id })).toEqual([running]);
  expect(await troops.tasks.list(alpha.id, { limit: 10 })).toEqual([done]);
  for (const task of [done, running, pending, queued]) expect(await troops.tasks.get(task.id)).toEqual(task);
  // The rotation goes on where it was; names stay unique; tasks save and end as before.
  expect(await troops.rotate(crew.id)).toBe(LEGACY.rotation);
  await expect(troops.create({ ...alpha, name: "crew" })).rejects.toMatchObject({ code: "CONFLICT" });
  await troops.tasks.save({ ...pending, status: "running", started_at: "2026-01-06T00:00:00.000Z" });
  const error = { code: "INTERRUPTED", message: "daemon restarted" };
  expect(await troops.tasks.abandon(error, "2026-01-07T00:00:00.000Z")).toBe(3);
  expect(await troops.tasks.get(done.id)).toEqual(done);
  expect(await troops.tasks.get(queued.id)).toEqual({
    ...queued,
    status: "failed",
    error,
    finished_at: "2026-01-07T00:00:00.000Z",
  });
  expect(await troops.remove(crew.id)).toBe(true);
  expect(await troops.tasks.get(running.id)).toBeUndefined();
}

describe("troops-local data: a store-sqlite database from before the collections", () => {
  const salt = Buffer.alloc(16, 7);

  /** The database opened with its key behind the store's back, as the old Spar did. */
  async function keyedDb(home: string): Promise<Database.Database> {
    const literal = rawKeyLiteral(await deriveKey(Buffer.from(SECRET), salt));
    const db = openRetained(join(home, DB_FILE), {});
    db.exec("PRAGMA cipher = 'sqlcipher'; PRAGMA legacy = 4");
    db.key(literal);
    return db;
  }

  /** A data dir of the previous release, migrated up to 18, holding LEGACY in the old tables. */
  async function legacyHome(): Promise<string> {
    const home = tempHome();
    const db = await previousSqlite(home, Buffer.from(SECRET), salt);
    migrate(
      db,
      "old",
      MIGRATIONS.filter((m) => m.version < 19),
    );
    const { crew, alpha } = LEGACY.troops;
    const insertTroop = db.prepare(
      "INSERT INTO troops (id, name, leader, members, strategy, created_at) VALUES (?, ?, ?, ?, ?, ?)",
    );
    for (const t of [crew, alpha])
      insertTroop.run(t.id, t.name, t.leader, JSON.stringify(t.members), t.strategy, t.created_at);
    const rotate = db.prepare(
      "UPDATE troops SET rotation = rotation + 1 WHERE id = ? RETURNING rotation - 1",
    );
    for (let i = 0; i < LEGACY.rotation; i++) rotate.get(crew.id);
    const insertTask = db.prepare(
      `INSERT INTO troop_tasks (id, troop_id, task, strategy, status, body, created_at)
       VALUES (?, ?, ?, ?, 'pending', ?, ?)`,
    );
    const save = db.prepare(
      `UPDATE troop_tasks SET status = @status, body = @body, error_code = @error_code,
         error_message = @error_message, partial = @partial, input_tokens = @input_tokens,
         output_tokens = @output_tokens, started_at = @started_at, finished_at = @finished_at
       WHERE id = @id`,
    );
    const { done, running, pending, queued } = LEGACY.tasks;
    for (const task of [done, running, pending, queued]) {
      const body = JSON.stringify({ result: null, steps: [] });
      insertTask.run(task.id, task.troop_id, task.task, task.strategy, body, task.created_at);
      if (task.status !== "pending") {
        const columns = stateColumns(task);
        save.run({ ...columns, partial: columns.partial ? 1 : 0 });
      }
    }
    db.close();
    return home;
  }

  it("finds every troop and task through the collections, and drops the old tables", async () => {
    const home = await legacyHome();
    const store = await openSqliteStore({ home, masterSecret: Buffer.from(SECRET) });
    try {
      await expectLegacyKept(troopsOf(store));
    } finally {
      await store.close();
    }
    const db = await keyedDb(home);
    try {
      const tables = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('troops', 'troop_tasks')")
        .all();
      expect(tables).toEqual([]);
      const version = db.prepare("SELECT max(version) AS v FROM schema_migrations").get() as { v: number };
      expect(version.v).toBeGreaterThanOrEqual(19);
    } finally {
      db.close();
    }
  });
});

describe.skipIf(!TEST_DATABASE_URL)(
  `troops-local data: a store-postgres schema from before the collections${TEST_DATABASE_URL ? "" : ` (${SKIP_REASON})`}`,
  () => {
    const url = TEST_DATABASE_URL ?? "";

    /** A schema as the previous release made it (version 4), holding LEGACY as its store wrote it. */
    async function legacyHome(): Promise<{ home: string; schema: string }> {
      const home = tempHome();
      const schema = schemaForHome(home);
      schemas.add(schema);
      const pool = createPool({ url, schema, poolMax: 2 });
      try {
        await previousPostgres(url, schema);
        const cipher = await openCipher(pool, Buffer.from(SECRET), schema);
        const { crew, alpha } = LEGACY.troops;
        for (const t of [crew, alpha]) {
          await pool.query(
            "INSERT INTO troops (id, name, leader, members, strategy, created_at) VALUES ($1, $2, $3, $4, $5, $6)",
            [t.id, t.name, t.leader, JSON.stringify(t.members), t.strategy, t.created_at],
          );
        }
        for (let i = 0; i < LEGACY.rotation; i++) {
          await pool.query("UPDATE troops SET rotation = rotation + 1 WHERE id = $1 RETURNING rotation - 1", [
            crew.id,
          ]);
        }
        const { done, running, pending, queued } = LEGACY.tasks;
        for (const task of [done, running, pending, queued]) {
          await pool.query(
            `INSERT INTO troop_tasks (id, troop_id, task, strategy, status, body, created_at)
             VALUES ($1, $2, $3, $4, 'pending', $5, $6)`,
            [
              task.id,
              task.troop_id,
              cipher.seal("troop_tasks.task", task.task),
              task.strategy,
              cipher.seal("troop_tasks.body", JSON.stringify({ result: null, steps: [] })),
              task.created_at,
            ],
          );
          if (task.status === "pending") continue;
          const c = stateColumns(task);
          await pool.query(
            `UPDATE troop_tasks SET status = $2, body = $3, error_code = $4, error_message = $5, partial = $6,
               input_tokens = $7, output_tokens = $8, started_at = $9, finished_at = $10
             WHERE id = $1`,
            [
              c.id,
              c.status,
              cipher.seal("troop_tasks.body", c.body),
              c.error_code,
              c.error_message,
              c.partial,
              c.input_tokens,
              c.output_tokens,
              c.started_at,
              c.finished_at,
            ],
          );
        }
        cipher.wipe();
      } finally {
        await pool.end();
      }
      return { home, schema };
    }

    it("finds every troop and task through the collections, and drops the old tables", async () => {
      const { home, schema } = await legacyHome();
      const open = () =>
        openPostgresStore({ home, masterSecret: Buffer.from(SECRET) }, { url, schema, poolMax: 3 });
      // Two daemons opening at once move the rows once.
      const [store, other] = await Promise.all([open(), open()]);
      try {
        await expectLegacyKept(troopsOf(store));
      } finally {
        await Promise.all([store.close(), other.close()]);
      }
      const pool = createPool({ url, schema, poolMax: 1 });
      try {
        const left = await pool.query(
          "SELECT to_regclass('troops')::text AS troops, to_regclass('troop_tasks')::text AS tasks",
        );
        expect(left.rows[0]).toEqual({ troops: null, tasks: null });
      } finally {
        await pool.end();
      }
      // And a third open finds nothing left to move.
      const again = await open();
      await again.close();
    });
  },
);
