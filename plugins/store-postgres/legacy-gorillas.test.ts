/**
 * The gorillas' tables of an older Spar (a schema its migrations made, rows written as its
 * store-postgres did, a run's output sealed) move into the scheduler plugins' collections at open:
 * every state and run found through them, in the order recorded, the running run still the one
 * running, the tables gone; and a daemon opening the schema at the same time finds nothing to move.
 */
import { randomUUID } from "node:crypto";
import type pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import type { Store } from "../../sdk/index.js";
import type { GorillaRunRecord } from "../../sdk/kits/gorillas.js";
import { gorillaRecordsOver } from "../../test/helpers/gorilla-records.js";
import { dropSchemas, SKIP_REASON, TEST_DATABASE_URL } from "../../test/helpers/postgres.js";
import { createPool } from "./connection.js";
import { openCipher } from "./keys.js";
import { MIGRATIONS, migrate } from "./migrations.js";
import { openPostgresStore } from "./store.js";

const URL_ = TEST_DATABASE_URL ?? "";
const SECRET = "c4".repeat(32);
const schemas = new Set<string>();
const pools: pg.Pool[] = [];
afterAll(async () => {
  await Promise.all(pools.map((p) => p.end().catch(() => undefined)));
  if (TEST_DATABASE_URL) await dropSchemas(URL_, schemas);
});

const day = (days: number): string =>
  new Date(Date.parse("2026-03-01T00:00:00.000Z") + days * 86_400_000).toISOString();
const open = (schema: string) =>
  openPostgresStore(
    { home: "/nonexistent-home", masterSecret: Buffer.from(SECRET) },
    { url: URL_, schema, poolMax: 2 },
  );

const RUNS: GorillaRunRecord[] = [
  {
    id: "r-ok",
    gorilla: "kong",
    trigger: "schedule",
    started_at: day(1),
    finished_at: day(1.1),
    outcome: "ok",
    usage: { input_tokens: 120, output_tokens: 45 },
    output: "tea prices steady",
    bout_id: "b1",
  },
  // Two runs started at the same time, recorded in this order; then one recorded later but older.
  {
    id: "r-tie-a",
    gorilla: "kong",
    trigger: "schedule",
    started_at: day(2),
    finished_at: day(2),
    outcome: "skipped",
    usage: { input_tokens: 0, output_tokens: 0 },
    error: "a cycle was still running",
  },
  {
    id: "r-tie-b",
    gorilla: "kong",
    trigger: "manual",
    started_at: day(2),
    finished_at: day(2.5),
    outcome: "failed",
    usage: { input_tokens: 9, output_tokens: 1 },
    output: "",
    error: "max_tokens reached (10)",
  },
  {
    id: "r-early",
    gorilla: "kong",
    trigger: "catch_up",
    started_at: day(0.75),
    finished_at: day(0.8),
    outcome: "aborted",
    usage: { input_tokens: 3, output_tokens: 0 },
    error: "was caged",
  },
  {
    id: "r-running",
    gorilla: "kong",
    trigger: "schedule",
    started_at: day(3),
    outcome: "running",
    usage: { input_tokens: 0, output_tokens: 0 },
  },
  {
    id: "r-joe",
    gorilla: "joe",
    trigger: "manual",
    started_at: day(1),
    finished_at: day(1.2),
    outcome: "ok",
    usage: { input_tokens: 1, output_tokens: 1 },
    output: "é".repeat(10),
  },
];

/** A schema as the release before collections left it, holding two gorillas and their runs. */
async function legacySchema(extraRuns = 0): Promise<string> {
  const schema = `t_leg_gor_${randomUUID().replaceAll("-", "").slice(0, 12)}`;
  schemas.add(schema);
  const pool = createPool({ url: URL_, schema, poolMax: 2 });
  pools.push(pool);
  const before = MIGRATIONS.filter((m) => m.version <= 4);
  expect(await migrate(pool, schema, before)).toEqual(before.map((m) => m.version));
  const cipher = await openCipher(pool, Buffer.from(SECRET), schema);
  try {
    await pool.query(
      "INSERT INTO fighters (id, name, manifest, created_at) VALUES ('f1', 'gorilla-kong', $1, $2)",
      [cipher.seal("fighters.manifest", JSON.stringify({ name: "gorilla-kong" })), day(0)],
    );
    await pool.query(
      "INSERT INTO bouts (id, fighter_id, created_at, updated_at, origin) VALUES ('b1', 'f1', $1, $1, 'gorilla:kong')",
      [day(1)],
    );
    // As store-postgres's gorillas.ts wrote them: the output sealed, the error plain.
    const state = "INSERT INTO gorillas (name, desired, changed_at, last_fire_at) VALUES ($1, $2, $3, $4)";
    await pool.query(state, ["kong", "unleashed", day(0.5), day(2)]);
    await pool.query(state, ["joe", "caged", day(0.25), null]);
    const insert = `INSERT INTO gorilla_runs (id, gorilla, trigger, started_at, finished_at, outcome, input_tokens,
      output_tokens, output, error, bout_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`;
    const extra = Array.from({ length: extraRuns }, (_, i) => ({
      ...(RUNS[1] as GorillaRunRecord),
      id: `r-many-${i}`,
      gorilla: "many",
    }));
    for (const r of [...RUNS, ...extra]) {
      await pool.query(insert, [
        r.id,
        r.gorilla,
        r.trigger,
        r.started_at,
        r.finished_at ?? null,
        r.outcome,
        r.usage.input_tokens,
        r.usage.output_tokens,
        r.output === undefined ? null : cipher.seal("gorilla_runs.output", r.output),
        r.error ?? null,
        r.bout_id ?? null,
      ]);
    }
  } finally {
    cipher.wipe();
  }
  return schema;
}

describe.skipIf(!TEST_DATABASE_URL)(
  `store-postgres: the legacy gorilla tables${TEST_DATABASE_URL ? "" : ` (${SKIP_REASON})`}`,
  () => {
    it("moves every state and run into the collections, in the order recorded, and drops the tables", async () => {
      const schema = await legacySchema();
      const store = await open(schema);
      try {
        const records = gorillaRecordsOver(store);
        expect(await records.states()).toEqual([
          { name: "joe", desired: "caged", changed_at: day(0.25) },
          { name: "kong", desired: "unleashed", changed_at: day(0.5), last_fire_at: day(2) },
        ]);
        const byId = new Map(RUNS.map((r) => [r.id, r]));
        for (const r of RUNS) expect(await records.runs.get(r.id)).toEqual(r);
        const kong = ["r-running", "r-tie-b", "r-tie-a", "r-ok", "r-early"];
        expect(await records.runs.list("kong", { limit: 10 })).toEqual(kong.map((id) => byId.get(id)));
        expect((await records.runs.list("kong", { limit: 2, before: "r-tie-b" })).map((r) => r.id)).toEqual([
          "r-tie-a",
          "r-ok",
        ]);
        // The moved running run is the one running: a second is refused, naming it.
        await expect(records.runs.begin({ gorilla: "kong", trigger: "manual" })).rejects.toMatchObject({
          code: "CONFLICT",
          extra: { run_id: "r-running" },
        });
        expect(await records.runs.abandon(day(4))).toBe(1);
        expect(await records.runs.get("r-running")).toMatchObject({ outcome: "failed", finished_at: day(4) });
      } finally {
        await store.close();
      }
      const pool = createPool({ url: URL_, schema, poolMax: 1 });
      pools.push(pool);
      const left = await pool.query(
        "SELECT to_regclass('gorillas')::text AS states, to_regclass('gorilla_runs')::text AS runs",
      );
      expect(left.rows[0]).toEqual({ states: null, runs: null });
      // Opening again finds nothing to move and everything where it was.
      const again = await open(schema);
      try {
        expect(await gorillaRecordsOver(again).runs.get("r-ok")).toEqual(byIdOf("r-ok"));
      } finally {
        await again.close();
      }
    });

    it("moves them once when two daemons open the schema at the same time, batches of runs included", async () => {
      const schema = await legacySchema(1_234);
      const stores: Store[] = await Promise.all([open(schema), open(schema)]);
      try {
        const records = gorillaRecordsOver(stores[0] as Store);
        expect((await records.states()).map((s) => s.name)).toEqual(["joe", "kong"]);
        const many = await records.runs.list("many", { limit: 2_000 });
        expect(many).toHaveLength(1_234);
        // All share one start time: newest recorded first.
        expect(many[0]?.id).toBe("r-many-1233");
        expect(many.at(-1)?.id).toBe("r-many-0");
        expect(await gorillaRecordsOver(stores[1] as Store).runs.list("kong", { limit: 10 })).toHaveLength(5);
      } finally {
        await Promise.all(stores.map((s) => s.close()));
      }
    });
  },
);

function byIdOf(id: string): GorillaRunRecord | undefined {
  return RUNS.find((r) => r.id === id);
}
