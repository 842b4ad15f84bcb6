/**
 * What the gorilla runtime keeps: each gorilla's desired state (what the operator asked for, the
 * last fire) and its runs, in the collections both scheduler plugins declare under the namespace
 * "gorillas" (`gorillas`, `runs`; see their plugin.json), so switching schedulers keeps the data.
 * The gorillas themselves are GORILLA.toml files: the records only know their names.
 *
 * "At most one running run per gorilla" is the unique on `running_gorilla`, a field a run holds
 * only while running: the store refuses a second across every daemon sharing it. Runs list newest
 * first by `started_at`; runs started at the same time, in the order they were recorded (the
 * store's write order, which a replaced row keeps).
 */
import { randomUUID } from "node:crypto";
import {
  type Collection,
  isSparError,
  type PluginData,
  SparError,
  type TxCollection,
  type Usage,
} from "../../sdk/index.js";
import { count, isoTime } from "../store-checks.js";

/** What a gorilla's operator asked for; the gorilla itself is a GORILLA.toml file, not a row. */
export type GorillaDesired = "caged" | "unleashed";

/** A gorilla's persisted state, kept by name so it survives restarts (and edits of its file). */
export interface GorillaState {
  name: string;
  desired: GorillaDesired;
  /** When `desired` last changed (ISO time). */
  changed_at: string;
  /** The last fire recorded with `recordFire`: where catch-up after a restart counts from. */
  last_fire_at?: string;
}

/** What started a run: the schedule, an operator (`run` now), or the catch-up after a restart. */
export type GorillaRunTrigger = "schedule" | "manual" | "catch_up";

/** `running` until it ends; `skipped` runs are recorded ended (a fire that ran no cycle). */
export type GorillaRunOutcome = "running" | "ok" | "failed" | "aborted" | "skipped";

/**
 * One gorilla cycle, or one fire that was skipped. Times are ISO 8601 in UTC with milliseconds
 * (the records normalize the times they are given).
 */
export interface GorillaRunRecord {
  id: string;
  gorilla: string;
  trigger: GorillaRunTrigger;
  started_at: string;
  /** Absent while running. */
  finished_at?: string;
  outcome: GorillaRunOutcome;
  usage: Usage;
  /** The cycle's result, at most 256 KiB of UTF-8 (see `runs.finish`). */
  output?: string;
  /** Why it failed, was aborted or was skipped. */
  error?: string;
  /** The fighter bout the cycle ran in, given when the run finished. */
  bout_id?: string;
}

/** How the runs of a gorilla end (`runs.finish`). */
export interface GorillaRunEnd {
  outcome: "ok" | "failed" | "aborted";
  usage: Usage;
  output?: string;
  error?: string;
  /** Default: now. */
  finished_at?: string;
  /** The bout the cycle ran in (BOUT_NOT_FOUND when there is no such bout). */
  bout_id?: string;
}

/** A run as stored: the record, and the gorilla's name again while it runs (the unique). */
type RunDoc = GorillaRunRecord & { running_gorilla?: string };

/** The gorilla records over a scheduler plugin's `api.data`. */
export interface GorillaRecords {
  /** The state recorded for a gorilla name; undefined when none was (a gorilla starts caged). */
  state(name: string): Promise<GorillaState | undefined>;
  /** Every recorded state, by name. */
  states(): Promise<GorillaState[]>;
  /** Records what the operator asked for; `changed_at` moves only when `desired` changes. Returns the state. */
  setDesired(name: string, desired: GorillaDesired): Promise<GorillaState>;
  /** Records a fire at `at` (a name with no state yet is recorded caged). Returns the state. */
  recordFire(name: string, at: string): Promise<GorillaState>;
  readonly runs: {
    /**
     * Starts a run (`running`, started now unless told). A gorilla has at most one running run:
     * a second is CONFLICT, with the running one's `run_id` (record the fire with `skipped` instead).
     */
    begin(start: {
      gorilla: string;
      trigger: GorillaRunTrigger;
      started_at?: string;
    }): Promise<GorillaRunRecord>;
    /**
     * Ends a running run. NOT_FOUND for an unknown id; CONFLICT when it has already ended (an
     * ended run never changes). `output` and `error` longer than 256 KiB (262,144 bytes) of UTF-8
     * are cut to fit that, marker included: they end with "\n[cut: N bytes in all]".
     */
    finish(id: string, end: GorillaRunEnd): Promise<GorillaRunRecord>;
    /** Records a fire that ran no cycle: outcome `skipped`, started and finished at `at`, `reason` as its error. */
    skipped(skip: {
      gorilla: string;
      at: string;
      reason: string;
      /** Default: "schedule". */
      trigger?: GorillaRunTrigger;
    }): Promise<GorillaRunRecord>;
    get(id: string): Promise<GorillaRunRecord | undefined>;
    /**
     * A gorilla's runs, newest first (by started_at; runs started at the same time, the later
     * recorded first), at most `limit` (an integer ≥ 1). `before` is a run id of that gorilla:
     * the page after it, with no run skipped or repeated however many share a start time
     * (NOT_FOUND once that run is gone).
     */
    list(gorilla: string, page: { limit: number; before?: string }): Promise<GorillaRunRecord[]>;
    /** At start: runs a stopped daemon left `running` become `failed`, "daemon restarted", at `now`. Returns how many. */
    abandon(now: string): Promise<number>;
    /** Keeps the gorilla's newest `keep` runs (and any still running), deletes the rest; returns how many went. */
    prune(gorilla: string, keep: number): Promise<number>;
  };
}

/** The most of a run's output (and error) kept, in bytes of UTF-8, marker included. */
export const RUN_TEXT_LIMIT = 256 * 1024;
/** The error of a run a stopped daemon left running. */
const ABANDONED = "daemon restarted";
/** The most rows one query reads (the collections' own cap). */
const PAGE = 10_000;
const NEWEST = { by: ["started_at"], desc: true } as const;

const DESIRED: ReadonlySet<string> = new Set(["caged", "unleashed"]);
const TRIGGERS: ReadonlySet<string> = new Set(["schedule", "manual", "catch_up"]);
const ENDINGS: ReadonlySet<string> = new Set(["ok", "failed", "aborted"]);

export interface GorillaRecordDeps {
  /** BOUT_NOT_FOUND unless the bout exists (a run's `bout_id`). */
  requireBout(boutId: string): Promise<void>;
}

/**
 * The records over `data` (the `gorillas` and `runs` collections of the namespace "gorillas").
 *
 * @example
 * const records = createGorillaRecords(api.data, { requireBout: async (id) => void (await api.ring.bouts.turns(id)) });
 * const run = await records.runs.begin({ gorilla: "scout", trigger: "manual" });
 */
export function createGorillaRecords(data: PluginData, deps: GorillaRecordDeps): GorillaRecords {
  const states = data.gorillas as Collection;
  const runs = data.runs as Collection;
  // Times apart by a millisecond at least, so a change is always later than the one before it.
  let last = 0;
  const now = () => {
    last = Math.max(Date.now(), last + 1);
    return new Date(last).toISOString();
  };

  /** Reads the state inside a transaction, writes what `change` makes of it, and returns that. */
  async function changeState(
    name: string,
    change: (state: GorillaState | undefined) => GorillaState | undefined,
  ): Promise<GorillaState> {
    return data.transaction(async (tx) => {
      const gorillas = tx.gorillas as TxCollection;
      const found = await gorillas.get(name);
      const before = found ? toState(found) : undefined;
      const after = change(before);
      if (!after) return before as GorillaState;
      gorillas.put({ ...after });
      return after;
    });
  }

  async function runningOf(gorilla: string): Promise<string | undefined> {
    return (await runs.find({ where: { running_gorilla: gorilla }, limit: 1 }))[0]?.id as string | undefined;
  }

  return {
    async state(name) {
      const found = await states.get(name);
      return found ? toState(found) : undefined;
    },
    async states() {
      const all: GorillaState[] = [];
      for (let after: string | undefined; ; ) {
        const page = await states.find({ limit: PAGE, ...(after ? { after } : {}) });
        all.push(...page.map(toState));
        if (page.length < PAGE) break;
        after = all.at(-1)?.name;
      }
      return all.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    },
    async setDesired(name, desired) {
      oneOf(desired, DESIRED, "desired");
      gorillaName(name);
      return changeState(name, (state) =>
        state?.desired === desired
          ? undefined
          : {
              name,
              desired,
              changed_at: now(),
              ...(state?.last_fire_at ? { last_fire_at: state.last_fire_at } : {}),
            },
      );
    },
    async recordFire(name, at) {
      gorillaName(name);
      const fired = isoTime(at, "at");
      return changeState(name, (state) => ({
        ...(state ?? { name, desired: "caged", changed_at: now() }),
        last_fire_at: fired,
      }));
    },
    runs: {
      async begin(start) {
        const gorilla = gorillaName(start.gorilla);
        oneOf(start.trigger, TRIGGERS, "trigger");
        const started_at = start.started_at === undefined ? now() : isoTime(start.started_at, "started_at");
        const run: GorillaRunRecord = {
          id: randomUUID(),
          gorilla,
          trigger: start.trigger,
          started_at,
          outcome: "running",
          usage: { input_tokens: 0, output_tokens: 0 },
        };
        try {
          await runs.insert({ ...run, running_gorilla: gorilla });
        } catch (err) {
          if (!isSparError(err, "CONFLICT")) throw err;
          const running = await runningOf(gorilla);
          throw new SparError(
            "CONFLICT",
            `gorilla ${gorilla} is already running (run ${running})`,
            running ? { run_id: running } : {},
          );
        }
        return run;
      },
      async finish(id, end) {
        oneOf(end.outcome, ENDINGS, "outcome");
        const usage = {
          input_tokens: count(end.usage?.input_tokens, 0, "usage.input_tokens"),
          output_tokens: count(end.usage?.output_tokens, 0, "usage.output_tokens"),
        };
        const finished_at = end.finished_at === undefined ? now() : isoTime(end.finished_at, "finished_at");
        // The run's checks come first, then the bout's: both read at once.
        const [found, noBout] = await Promise.all([
          runs.get(id),
          end.bout_id === undefined
            ? undefined
            : deps.requireBout(end.bout_id).then(
                () => undefined,
                (err) => err,
              ),
        ]);
        stillRunning(id, found);
        if (noBout) throw noBout;
        // Read again under the transaction: of two finishes racing, one ends the run.
        return data.transaction(async (tx) => {
          const store = tx.runs as TxCollection;
          const run = toRun(stillRunning(id, await store.get(id)));
          const ended: GorillaRunRecord = {
            ...run,
            outcome: end.outcome,
            finished_at,
            usage,
            ...(end.output === undefined ? {} : { output: capText(end.output) }),
            ...(end.error === undefined ? {} : { error: capText(end.error) }),
            ...(end.bout_id === undefined ? {} : { bout_id: end.bout_id }),
          };
          store.put({ ...ended });
          return ended;
        });
      },
      async skipped(skip) {
        const trigger = skip.trigger ?? "schedule";
        oneOf(trigger, TRIGGERS, "trigger");
        const at = isoTime(skip.at, "at");
        const run: GorillaRunRecord = {
          id: randomUUID(),
          gorilla: gorillaName(skip.gorilla),
          trigger,
          started_at: at,
          finished_at: at,
          outcome: "skipped",
          usage: { input_tokens: 0, output_tokens: 0 },
          error: capText(skip.reason),
        };
        await runs.insert({ ...run });
        return run;
      },
      async get(id) {
        const found = await runs.get(id);
        return found ? toRun(found) : undefined;
      },
      async list(gorilla, page) {
        const limit = count(page.limit, 1, "limit");
        if (page.before !== undefined && (await runs.get(page.before))?.gorilla !== gorilla) {
          throw new SparError("NOT_FOUND", `gorilla ${gorilla} has no run ${page.before}`);
        }
        const found: GorillaRunRecord[] = [];
        let after = page.before;
        while (found.length < limit) {
          const want = Math.min(PAGE, limit - found.length);
          const rows = await runs.find({
            where: { gorilla },
            order: NEWEST,
            limit: want,
            ...(after === undefined ? {} : { after }),
          });
          found.push(...rows.map(toRun));
          if (rows.length < want) break;
          after = found.at(-1)?.id;
        }
        return found;
      },
      async abandon(at) {
        const finished_at = isoTime(at, "now");
        return data.transaction(async (tx) => {
          const store = tx.runs as TxCollection;
          const left = await store.find({ where: { outcome: "running" } });
          for (const run of left) {
            store.put({ ...toRun(run), outcome: "failed", error: ABANDONED, finished_at });
          }
          return left.length;
        });
      },
      async prune(gorilla, keep) {
        count(keep, 0, "keep");
        let pruned = 0;
        // The runs past the newest `keep` are the oldest (total − keep), oldest first with ties in
        // the order recorded: the exact complement. A batch at a time, each in one transaction.
        for (let more = true; more; ) {
          more = await data.transaction(async (tx) => {
            const store = tx.runs as TxCollection;
            const excess = (await store.count({ gorilla })) - keep;
            if (excess <= 0) return false;
            const oldest = await store.find({
              where: { gorilla },
              order: { by: ["started_at"] },
              limit: Math.min(PAGE, excess),
            });
            const ended = oldest.filter((run) => run.outcome !== "running");
            for (const run of ended) store.delete(run.id as string);
            pruned += ended.length;
            return excess > PAGE && ended.length > 0;
          });
        }
        return pruned;
      },
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

function stillRunning(id: string, run: Record<string, unknown> | undefined): Record<string, unknown> {
  if (!run) throw new SparError("NOT_FOUND", `no gorilla run with id ${id}`);
  if (run.outcome !== "running") {
    throw new SparError("CONFLICT", `gorilla run ${id} has already ended (${String(run.outcome)})`);
  }
  return run;
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

/** A stored state as the runtime sees it (a migrated row may hold null for an absent field). */
function toState(doc: Record<string, unknown>): GorillaState {
  return {
    name: doc.name as string,
    desired: doc.desired as GorillaDesired,
    changed_at: doc.changed_at as string,
    ...(doc.last_fire_at ? { last_fire_at: doc.last_fire_at as string } : {}),
  };
}

/** A stored run as a record: without `running_gorilla`, absent fields absent. */
function toRun(doc: Record<string, unknown>): GorillaRunRecord {
  const run = doc as unknown as RunDoc;
  const usage = run.usage ?? { input_tokens: 0, output_tokens: 0 };
  return {
    id: run.id,
    gorilla: run.gorilla,
    trigger: run.trigger,
    started_at: run.started_at,
    ...(run.finished_at ? { finished_at: run.finished_at } : {}),
    outcome: run.outcome,
    usage: { input_tokens: usage.input_tokens, output_tokens: usage.output_tokens },
    ...(typeof run.output === "string" ? { output: run.output } : {}),
    ...(typeof run.error === "string" ? { error: run.error } : {}),
    ...(run.bout_id ? { bout_id: run.bout_id } : {}),
  };
}
