/**
 * Gorillas' persisted state (what the operator asked for, the last fire) and their runs. A run's
 * output is sealed; its error (the daemon's own words: "daemon restarted", a budget reached) stays
 * plain so that abandoning runs is one UPDATE. The partial unique index on running runs is what
 * keeps one running cycle per gorilla, across every daemon sharing the database.
 */
import { randomUUID } from "node:crypto";
import { count, isoTime } from "../../lib/store-checks.js";
import type {
  GorillaDesired,
  GorillaRunOutcome,
  GorillaRunRecord,
  GorillaRunTrigger,
  GorillaState,
} from "../../sdk/index.js";
import { SparError } from "../../sdk/index.js";
import { isUniqueViolation } from "./connection.js";
import { requireBout, type StoreContext, type StoreData } from "./context.js";

/** The most of a run's output (and error) the store keeps, in bytes of UTF-8, marker included. */
export const RUN_TEXT_LIMIT = 256 * 1024;
const ABANDONED = "daemon restarted";

interface StateDbRow {
  name: string;
  desired: GorillaDesired;
  changed_at: string;
  last_fire_at: string | null;
}

interface RunDbRow {
  seq: number;
  id: string;
  gorilla: string;
  trigger: GorillaRunTrigger;
  started_at: string;
  finished_at: string | null;
  outcome: GorillaRunOutcome;
  input_tokens: number;
  output_tokens: number;
  output: Buffer | null;
  error: string | null;
  bout_id: string | null;
}

const STATE_COLUMNS = "name, desired, changed_at, last_fire_at";
const RUN_COLUMNS =
  "seq, id, gorilla, trigger, started_at, finished_at, outcome, input_tokens, output_tokens, output, error, bout_id";
const NEWEST = "ORDER BY started_at DESC, seq DESC";
const DESIRED: ReadonlySet<string> = new Set(["caged", "unleashed"]);
const TRIGGERS: ReadonlySet<string> = new Set(["schedule", "manual", "catch_up"]);
const ENDINGS: ReadonlySet<string> = new Set(["ok", "failed", "aborted"]);

export function createGorillas(ctx: StoreContext): StoreData["gorillas"] {
  const { pool, cipher, now } = ctx;
  const toRun = (row: RunDbRow): GorillaRunRecord => ({
    id: row.id,
    gorilla: row.gorilla,
    trigger: row.trigger,
    started_at: row.started_at,
    ...(row.finished_at ? { finished_at: row.finished_at } : {}),
    outcome: row.outcome,
    usage: { input_tokens: row.input_tokens, output_tokens: row.output_tokens },
    ...(row.output !== null ? { output: cipher.open("gorilla_runs.output", row.output) } : {}),
    ...(row.error !== null ? { error: row.error } : {}),
    ...(row.bout_id ? { bout_id: row.bout_id } : {}),
  });
  const stateRow = async (name: string) =>
    (await pool.query<StateDbRow>(`SELECT ${STATE_COLUMNS} FROM gorillas WHERE name = $1`, [name])).rows[0];
  const runRow = async (id: string) =>
    (await pool.query<RunDbRow>(`SELECT ${RUN_COLUMNS} FROM gorilla_runs WHERE id = $1`, [id])).rows[0];
  const insertedRun = async (sql: string, params: unknown[]) =>
    toRun((await pool.query<RunDbRow>(`${sql} RETURNING ${RUN_COLUMNS}`, params)).rows[0] as RunDbRow);

  return {
    async state(name) {
      const row = await stateRow(name);
      return row ? toState(row) : undefined;
    },
    states: async () =>
      (await pool.query<StateDbRow>(`SELECT ${STATE_COLUMNS} FROM gorillas ORDER BY name`)).rows.map(toState),
    async setDesired(name, desired) {
      oneOf(desired, DESIRED, "desired");
      const row = await pool.query<StateDbRow>(
        `INSERT INTO gorillas (name, desired, changed_at) VALUES ($1, $2, $3)
         ON CONFLICT (name) DO UPDATE SET desired = excluded.desired, changed_at = excluded.changed_at
         WHERE gorillas.desired <> excluded.desired RETURNING ${STATE_COLUMNS}`,
        [gorillaName(name), desired, now()],
      );
      return toState(row.rows[0] ?? ((await stateRow(name)) as StateDbRow));
    },
    async recordFire(name, at) {
      const row = await pool.query<StateDbRow>(
        `INSERT INTO gorillas (name, desired, changed_at, last_fire_at) VALUES ($1, 'caged', $2, $3)
         ON CONFLICT (name) DO UPDATE SET last_fire_at = excluded.last_fire_at RETURNING ${STATE_COLUMNS}`,
        [gorillaName(name), now(), isoTime(at, "at")],
      );
      return toState(row.rows[0] as StateDbRow);
    },
    runs: {
      async begin(start) {
        const gorilla = gorillaName(start.gorilla);
        oneOf(start.trigger, TRIGGERS, "trigger");
        const startedAt = start.started_at === undefined ? now() : isoTime(start.started_at, "started_at");
        try {
          return await insertedRun(
            `INSERT INTO gorilla_runs (id, gorilla, trigger, started_at, outcome) VALUES ($1, $2, $3, $4, 'running')`,
            [randomUUID(), gorilla, start.trigger, startedAt],
          );
        } catch (err) {
          if (!isUniqueViolation(err)) throw err;
          const running = (
            await pool.query<{ id: string }>(
              "SELECT id FROM gorilla_runs WHERE gorilla = $1 AND outcome = 'running'",
              [gorilla],
            )
          ).rows[0]?.id;
          throw new SparError(
            "CONFLICT",
            `gorilla ${gorilla} is already running (run ${running})`,
            running ? { run_id: running } : {},
          );
        }
      },
      async finish(id, end) {
        oneOf(end.outcome, ENDINGS, "outcome");
        const usage = {
          input_tokens: count(end.usage?.input_tokens, 0, "usage.input_tokens"),
          output_tokens: count(end.usage?.output_tokens, 0, "usage.output_tokens"),
        };
        const finishedAt = end.finished_at === undefined ? now() : isoTime(end.finished_at, "finished_at");
        const row = await runRow(id);
        if (!row) throw new SparError("NOT_FOUND", `no gorilla run with id ${id}`);
        if (row.outcome !== "running") throw ended(id, row.outcome);
        if (end.bout_id !== undefined) await requireBout(pool, end.bout_id);
        // `outcome = 'running'` in the statement: of two finishes racing, one ends the run.
        const done = await pool.query<RunDbRow>(
          `UPDATE gorilla_runs SET outcome = $2, finished_at = $3, input_tokens = $4, output_tokens = $5,
             output = $6, error = $7, bout_id = $8
           WHERE id = $1 AND outcome = 'running' RETURNING ${RUN_COLUMNS}`,
          [
            id,
            end.outcome,
            finishedAt,
            usage.input_tokens,
            usage.output_tokens,
            end.output === undefined ? null : cipher.seal("gorilla_runs.output", capText(end.output)),
            end.error === undefined ? null : capText(end.error),
            end.bout_id ?? null,
          ],
        );
        if (!done.rows[0]) throw ended(id, "ended");
        return toRun(done.rows[0]);
      },
      async skipped(skip) {
        const trigger = skip.trigger ?? "schedule";
        oneOf(trigger, TRIGGERS, "trigger");
        return insertedRun(
          `INSERT INTO gorilla_runs (id, gorilla, trigger, started_at, finished_at, outcome, error)
           VALUES ($1, $2, $3, $4, $4, 'skipped', $5)`,
          [randomUUID(), gorillaName(skip.gorilla), trigger, isoTime(skip.at, "at"), capText(skip.reason)],
        );
      },
      async get(id) {
        const row = await runRow(id);
        return row ? toRun(row) : undefined;
      },
      async list(gorilla, page) {
        const limit = count(page.limit, 1, "limit");
        if (page.before === undefined) {
          const rows = await pool.query<RunDbRow>(
            `SELECT ${RUN_COLUMNS} FROM gorilla_runs WHERE gorilla = $1 ${NEWEST} LIMIT $2`,
            [gorilla, limit],
          );
          return rows.rows.map(toRun);
        }
        const cursor = await runRow(page.before);
        if (!cursor || cursor.gorilla !== gorilla) {
          throw new SparError("NOT_FOUND", `gorilla ${gorilla} has no run ${page.before}`);
        }
        const rows = await pool.query<RunDbRow>(
          `SELECT ${RUN_COLUMNS} FROM gorilla_runs WHERE gorilla = $1 AND (started_at, seq) < ($2, $3) ${NEWEST} LIMIT $4`,
          [gorilla, cursor.started_at, cursor.seq, limit],
        );
        return rows.rows.map(toRun);
      },
      abandon: async (at) =>
        (
          await pool.query(
            "UPDATE gorilla_runs SET outcome = 'failed', error = $1, finished_at = $2 WHERE outcome = 'running'",
            [ABANDONED, isoTime(at, "now")],
          )
        ).rowCount ?? 0,
      prune: async (gorilla, keep) =>
        (
          await pool.query(
            `DELETE FROM gorilla_runs WHERE gorilla = $1 AND outcome <> 'running' AND seq NOT IN
               (SELECT seq FROM gorilla_runs WHERE gorilla = $1 ${NEWEST} LIMIT $2)`,
            [gorilla, count(keep, 0, "keep")],
          )
        ).rowCount ?? 0,
    },
  };
}

/**
 * `text`, or, past RUN_TEXT_LIMIT bytes of UTF-8, as much of its start as fits with the marker
 * "\n[cut: N bytes in all]" after it, never splitting a character (as store-sqlite).
 */
export function capText(text: string): string {
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes <= RUN_TEXT_LIMIT) return text;
  const marker = `\n[cut: ${bytes} bytes in all]`;
  const utf8 = Buffer.from(text, "utf8");
  let end = RUN_TEXT_LIMIT - Buffer.byteLength(marker, "utf8");
  while (end > 0 && ((utf8[end] ?? 0) & 0xc0) === 0x80) end -= 1;
  return utf8.subarray(0, end).toString("utf8") + marker;
}

function ended(id: string, outcome: string): SparError {
  return new SparError("CONFLICT", `gorilla run ${id} has already ended (${outcome})`);
}

function gorillaName(name: string): string {
  if (typeof name !== "string" || name === "") {
    throw new SparError("VALIDATION_FAILED", "a gorilla name must be a non-empty string");
  }
  return name;
}

function oneOf(value: string, allowed: ReadonlySet<string>, field: string): void {
  if (!allowed.has(value)) {
    throw new SparError(
      "VALIDATION_FAILED",
      `${field} must be one of ${[...allowed].join(", ")}, not ${String(value)}`,
    );
  }
}

function toState(row: StateDbRow): GorillaState {
  return {
    name: row.name,
    desired: row.desired,
    changed_at: row.changed_at,
    ...(row.last_fire_at ? { last_fire_at: row.last_fire_at } : {}),
  };
}
