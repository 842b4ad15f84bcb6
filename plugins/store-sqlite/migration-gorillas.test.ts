/**
 * Migration 18: a database whose gorillas and gorilla_runs tables an older Spar filled opens with
 * every state and run found through the scheduler plugins' collections (namespace "gorillas"), the
 * legacy tables gone, and the run semantics kept (newest first with ties in the order recorded, the
 * running run still the one running).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import type { GorillaRunRecord } from "../../sdk/kits/gorillas.js";
import { gorillaRecordsOver } from "../../test/helpers/gorilla-records.js";
import { deriveKey, rawKeyLiteral } from "./key.js";
import { MIGRATIONS, migrate } from "./migrations.js";
import { openRetained } from "./retain.js";
import { DB_FILE, openSqliteStore, SALT_FILE } from "./store.js";

const SECRET = "gorilla-migration";
const SALT = Buffer.alloc(16, 7);
const home = mkdtempSync(join(tmpdir(), "spar-migration-gorillas-"));
afterAll(() => rmSync(home, { recursive: true, force: true }));

const day = (days: number): string =>
  new Date(Date.parse("2026-03-01T00:00:00.000Z") + days * 86_400_000).toISOString();

async function keyedDb() {
  const db = openRetained(join(home, DB_FILE), {});
  db.exec("PRAGMA cipher = 'sqlcipher'; PRAGMA legacy = 4");
  db.key(rawKeyLiteral(await deriveKey(Buffer.from(SECRET), SALT)));
  return db;
}

it("moves the gorillas' states and runs into their collections, in the order they were recorded", async () => {
  writeFileSync(join(home, SALT_FILE), SALT, { mode: 0o600 });
  const old = await keyedDb();
  const before = MIGRATIONS.filter((m) => m.version < 18);
  expect(migrate(old, "old", before)).toEqual(before.map((m) => m.version));
  old
    .prepare("INSERT INTO fighters (id, name, manifest, created_at) VALUES ('f1', 'gorilla-kong', '{}', ?)")
    .run(day(0));
  old
    .prepare("INSERT INTO bouts (id, fighter_id, created_at, updated_at) VALUES ('b1', 'f1', ?, ?)")
    .run(day(1), day(1));
  // As store-sqlite's gorillas.ts wrote them.
  const state = old.prepare(
    "INSERT INTO gorillas (name, desired, changed_at, last_fire_at) VALUES (?, ?, ?, ?)",
  );
  state.run("kong", "unleashed", day(0.5), day(2));
  state.run("joe", "caged", day(0.25), null);
  const run = old.prepare(
    `INSERT INTO gorilla_runs (id, gorilla, trigger, started_at, finished_at, outcome, input_tokens,
       output_tokens, output, error, bout_id) VALUES (@id, @gorilla, @trigger, @started_at, @finished_at,
       @outcome, @input_tokens, @output_tokens, @output, @error, @bout_id)`,
  );
  const rows: GorillaRunRecord[] = [
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
  for (const r of rows) {
    run.run({
      id: r.id,
      gorilla: r.gorilla,
      trigger: r.trigger,
      started_at: r.started_at,
      finished_at: r.finished_at ?? null,
      outcome: r.outcome,
      input_tokens: r.usage.input_tokens,
      output_tokens: r.usage.output_tokens,
      output: r.output ?? null,
      error: r.error ?? null,
      bout_id: r.bout_id ?? null,
    });
  }
  old.close();

  const store = await openSqliteStore({ home, masterSecret: Buffer.from(SECRET) });
  try {
    const records = gorillaRecordsOver(store);
    expect(await records.states()).toEqual([
      { name: "joe", desired: "caged", changed_at: day(0.25) },
      { name: "kong", desired: "unleashed", changed_at: day(0.5), last_fire_at: day(2) },
    ]);
    const byId = new Map(rows.map((r) => [r.id, r]));
    for (const r of rows) expect(await records.runs.get(r.id)).toEqual(r);
    const kong = ["r-running", "r-tie-b", "r-tie-a", "r-ok", "r-early"];
    expect(await records.runs.list("kong", { limit: 10 })).toEqual(kong.map((id) => byId.get(id)));
    expect((await records.runs.list("kong", { limit: 2, before: "r-tie-b" })).map((r) => r.id)).toEqual([
      "r-tie-a",
      "r-ok",
    ]);
    // The migrated running run is the one running: a second is refused, naming it.
    await expect(records.runs.begin({ gorilla: "kong", trigger: "manual" })).rejects.toMatchObject({
      code: "CONFLICT",
      extra: { run_id: "r-running" },
    });
    expect(await records.runs.begin({ gorilla: "joe", trigger: "manual" })).toMatchObject({
      outcome: "running",
    });
    expect(await records.runs.abandon(day(4))).toBe(2);
    expect(await records.runs.get("r-running")).toEqual({
      ...byId.get("r-running"),
      outcome: "failed",
      error: "daemon restarted",
      finished_at: day(4),
    });
    expect(await records.runs.prune("kong", 2)).toBe(3);
    expect((await records.runs.list("kong", { limit: 10 })).map((r) => r.id)).toEqual([
      "r-running",
      "r-tie-b",
    ]);
  } finally {
    await store.close();
  }
  const db = await keyedDb();
  const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all();
  expect(tables).not.toContain("gorillas");
  expect(tables).not.toContain("gorilla_runs");
  db.close();
});
