/**
 * Gorillas' persisted state (what the operator asked for, the last fire) and their runs. The
 * gorillas themselves are GORILLA.toml files; the store only knows their names.
 */
import { randomUUID } from "node:crypto";
import type Database from "better-sqlite3-multiple-ciphers";
import { count, isoTime } from "../../lib/store-checks.js";
import type {
  GorillaDesired,
  GorillaRunEnd,
  GorillaRunOutcome,
  GorillaRunRecord,
  GorillaRunTrigger,
  GorillaState,
} from "../../sdk/index.js";
import { SparError } from "../../sdk/index.js";
import type { StoreData } from "./sync-store.js";

/** The most of a run's output (and error) the store keeps, in bytes of UTF-8, marker included. */
export const RUN_TEXT_LIMIT = 256 * 1024;

/** The error of a run a stopped daemon left running. */
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
  output: string | null;
  error: string | null;
  bout_id: string | null;
}

interface RunEndDbRow {
  id: string;
  outcome: string;
  finished_at: string;
  input_tokens: number;
  output_tokens: number;
  output: string | null;
  error: string | null;
  bout_id: string | null;
}

const STATE_COLUMNS = "name, desired, changed_at, last_fire_at";
const RUN_COLUMNS =
  "seq, id, gorilla, trigger, started_at, finished_at, outcome, input_tokens, output_tokens, output, error, bout_id";
// Newest first; seq (the rowid, also the last column of gorilla_runs_newest) breaks ties.
const NEWEST = "ORDER BY started_at DESC, seq DESC";

const DESIRED: ReadonlySet<string> = new Set(["caged", "unleashed"]);
const TRIGGERS: ReadonlySet<string> = new Set(["schedule", "manual", "catch_up"]);
const ENDINGS: ReadonlySet<string> = new Set(["ok", "failed", "aborted"]);

export interface GorillaDeps {
  now: () => string;
  requireBout(boutId: string): void;
}

export function createGorillas(db: Database.Database, deps: GorillaDeps): StoreData["gorillas"] {
  const { now } = deps;
  const s = {
    state: db.prepare<[string], StateDbRow>(`SELECT ${STATE_COLUMNS} FROM gorillas WHERE name = ?`),
    states: db.prepare<[], StateDbRow>(`SELECT ${STATE_COLUMNS} FROM gorillas ORDER BY name`),
    desire: db.prepare<[string, string, string], void>(
      `INSERT INTO gorillas (name, desired, changed_at) VALUES (?, ?, ?)
       ON CONFLICT (name) DO UPDATE SET desired = excluded.desired, changed_at = excluded.changed_at
       WHERE desired <> excluded.desired`,
    ),
    fire: db.prepare<[string, string, string], void>(
      `INSERT INTO gorillas (name, desired, changed_at, last_fire_at) VALUES (?, 'caged', ?, ?)
       ON CONFLICT (name) DO UPDATE SET last_fire_at = excluded.last_fire_at`,
    ),
    insertRun: db.prepare<[{ id: string; gorilla: string; trigger: string; started_at: string }], void>(
      `INSERT INTO gorilla_runs (id, gorilla, trigger, started_at, outcome)
       VALUES (@id, @gorilla, @trigger, @started_at, 'running')`,
    ),
    insertSkipped: db.prepare<
      [{ id: string; gorilla: string; trigger: string; at: string; error: string }],
      void
    >(
      `INSERT INTO gorilla_runs (id, gorilla, trigger, started_at, finished_at, outcome, error)
       VALUES (@id, @gorilla, @trigger, @at, @at, 'skipped', @error)`,
    ),
    run: db.prepare<[string], RunDbRow>(`SELECT ${RUN_COLUMNS} FROM gorilla_runs WHERE id = ?`),
    running: db
      .prepare<[string], string>("SELECT id FROM gorilla_runs WHERE gorilla = ? AND outcome = 'running'")
      .pluck(),
    end: db.prepare<[RunEndDbRow], void>(
      `UPDATE gorilla_runs SET outcome = @outcome, finished_at = @finished_at, input_tokens = @input_tokens,
         output_tokens = @output_tokens, output = @output, error = @error, bout_id = @bout_id
       WHERE id = @id AND outcome = 'running'`,
    ),
    newest: db.prepare<[string, number], RunDbRow>(
      `SELECT ${RUN_COLUMNS} FROM gorilla_runs WHERE gorilla = ? ${NEWEST} LIMIT ?`,
    ),
    after: db.prepare<[string, string, number, number], RunDbRow>(
      `SELECT ${RUN_COLUMNS} FROM gorilla_runs WHERE gorilla = ? AND (started_at, seq) < (?, ?) ${NEWEST} LIMIT ?`,
    ),
    abandon: db.prepare<[string, string], void>(
      "UPDATE gorilla_runs SET outcome = 'failed', error = ?, finished_at = ? WHERE outcome = 'running'",
    ),
    prune: db.prepare<[{ gorilla: string; keep: number }], void>(
      `DELETE FROM gorilla_runs WHERE gorilla = @gorilla AND outcome <> 'running' AND seq NOT IN
         (SELECT seq FROM gorilla_runs WHERE gorilla = @gorilla ${NEWEST} LIMIT @keep)`,
    ),
  };

  const stateOf = (name: string): GorillaState => toState(s.state.get(name) as StateDbRow);

  function runningRun(id: string): RunDbRow {
    const row = s.run.get(id);
    if (!row) throw new SparError("NOT_FOUND", `no gorilla run with id ${id}`);
    if (row.outcome !== "running") {
      throw new SparError("CONFLICT", `gorilla run ${id} has already ended (${row.outcome})`);
    }
    return row;
  }

  return {
    state(name) {
      const row = s.state.get(name);
      return row ? toState(row) : undefined;
    },
    states: () => s.states.all().map(toState),
    setDesired(name, desired) {
      oneOf(desired, DESIRED, "desired");
      s.desire.run(gorillaName(name), desired, now());
      return stateOf(name);
    },
    recordFire(name, at) {
      s.fire.run(gorillaName(name), now(), isoTime(at, "at"));
      return stateOf(name);
    },
    runs: {
      begin(start) {
        const gorilla = gorillaName(start.gorilla);
        oneOf(start.trigger, TRIGGERS, "trigger");
        const startedAt = start.started_at === undefined ? now() : isoTime(start.started_at, "started_at");
        const running = s.running.get(gorilla);
        if (running !== undefined) {
          throw new SparError("CONFLICT", `gorilla ${gorilla} is already running (run ${running})`, {
            run_id: running,
          });
        }
        const id = randomUUID();
        s.insertRun.run({ id, gorilla, trigger: start.trigger, started_at: startedAt });
        return toRun(s.run.get(id) as RunDbRow);
      },
      finish(id, end) {
        oneOf(end.outcome, ENDINGS, "outcome");
        const usage = checkUsage(end.usage);
        const finishedAt = end.finished_at === undefined ? now() : isoTime(end.finished_at, "finished_at");
        runningRun(id);
        if (end.bout_id !== undefined) deps.requireBout(end.bout_id);
        s.end.run({
          id,
          outcome: end.outcome,
          finished_at: finishedAt,
          ...usage,
          output: end.output === undefined ? null : capText(end.output),
          error: end.error === undefined ? null : capText(end.error),
          bout_id: end.bout_id ?? null,
        });
        return toRun(s.run.get(id) as RunDbRow);
      },
      skipped(skip) {
        const trigger = skip.trigger ?? "schedule";
        oneOf(trigger, TRIGGERS, "trigger");
        const id = randomUUID();
        s.insertSkipped.run({
          id,
          gorilla: gorillaName(skip.gorilla),
          trigger,
          at: isoTime(skip.at, "at"),
          error: capText(skip.reason),
        });
        return toRun(s.run.get(id) as RunDbRow);
      },
      get(id) {
        const row = s.run.get(id);
        return row ? toRun(row) : undefined;
      },
      list(gorilla, page) {
        const limit = count(page.limit, 1, "limit");
        if (page.before === undefined) return s.newest.all(gorilla, limit).map(toRun);
        const cursor = s.run.get(page.before);
        if (!cursor || cursor.gorilla !== gorilla) {
          throw new SparError("NOT_FOUND", `gorilla ${gorilla} has no run ${page.before}`);
        }
        return s.after.all(gorilla, cursor.started_at, cursor.seq, limit).map(toRun);
      },
      abandon: (at) => s.abandon.run(ABANDONED, isoTime(at, "now")).changes,
      prune: (gorilla, keep) => s.prune.run({ gorilla, keep: count(keep, 0, "keep") }).changes,
    },
  };
}

/**
 * `text`, or, past RUN_TEXT_LIMIT bytes of UTF-8, as much of its start as fits with the marker
 * "\n[cut: N bytes in all]" after it, never splitting a character.
 */
export function capText(text: string): string {
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes <= RUN_TEXT_LIMIT) return text;
  const marker = `\n[cut: ${bytes} bytes in all]`;
  const utf8 = Buffer.from(text, "utf8");
  let end = RUN_TEXT_LIMIT - Buffer.byteLength(marker, "utf8");
  // A continuation byte (10xxxxxx) at the cut means the character before it would be split.
  while (end > 0 && ((utf8[end] ?? 0) & 0xc0) === 0x80) end -= 1;
  return utf8.subarray(0, end).toString("utf8") + marker;
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

function checkUsage(usage: GorillaRunEnd["usage"]): { input_tokens: number; output_tokens: number } {
  return {
    input_tokens: count(usage?.input_tokens, 0, "usage.input_tokens"),
    output_tokens: count(usage?.output_tokens, 0, "usage.output_tokens"),
  };
}

function toState(row: StateDbRow): GorillaState {
  return {
    name: row.name,
    desired: row.desired,
    changed_at: row.changed_at,
    ...(row.last_fire_at ? { last_fire_at: row.last_fire_at } : {}),
  };
}

function toRun(row: RunDbRow): GorillaRunRecord {
  return {
    id: row.id,
    gorilla: row.gorilla,
    trigger: row.trigger,
    started_at: row.started_at,
    ...(row.finished_at ? { finished_at: row.finished_at } : {}),
    outcome: row.outcome,
    usage: { input_tokens: row.input_tokens, output_tokens: row.output_tokens },
    ...(row.output !== null ? { output: row.output } : {}),
    ...(row.error !== null ? { error: row.error } : {}),
    ...(row.bout_id ? { bout_id: row.bout_id } : {}),
  };
}
