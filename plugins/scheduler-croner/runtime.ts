/**
 * The gorillas of this daemon and their lifecycle (DESIGN §11): CAGED by default; unleashing arms a
 * timer on the schedule, each fire starts a cycle (RAMPAGING) or, while one runs, is recorded
 * `skipped`; caging disarms it and aborts the running cycle. What the operator asked for is kept in
 * the store, so a restart brings every unleashed gorilla back on its schedule, with the catch-up
 * policy deciding about fires missed while the daemon was down.
 *
 * Timers: one per unleashed gorilla, set for its next fire from `schedule.next` (croner), so the
 * fire time is a function of the clock and a fire is measured against the time it was due.
 */
import { join } from "node:path";
import {
  type EventBus,
  type GorillaDesired,
  type GorillaRunRecord,
  type GorillaRunTrigger,
  isSparError,
  type Logger,
  PACKAGE_ROOT,
  type RingServices,
  SparError,
} from "../../kernel/sdk.js";
import { type GorillaProblem, type LoadedGorilla, loadGorillas } from "../../lib/gorillas/manifest.js";
import { type Cycle, type CycleDeps, fighterManifest, fighterName, startCycle, stopCycle } from "./cycle.js";
import { catchUp, type GorillaStatus, missedFire, onFire, statusOf } from "./lifecycle.js";

/** setTimeout's longest delay: a fire further away is looked at again then. */
const MAX_DELAY_MS = 2 ** 31 - 1;
/** Runs recorded between two prunes of a gorilla's history. */
const PRUNE_EVERY = 100;
/** How long caging or stopping waits for a cycle to wind down and be recorded. */
const WIND_DOWN_MS = 15_000;

interface Entry {
  gorilla: LoadedGorilla;
  desired: GorillaDesired;
  timer?: NodeJS.Timeout;
  /** The next fire, while unleashed. */
  next?: Date;
  cycle?: Cycle;
  last_run?: GorillaRunRecord;
  /** The gorilla's fighter's name, once it is known to exist. */
  fighter?: Promise<string>;
  recorded: number;
}

export interface RuntimeOptions {
  ring: RingServices;
  events: EventBus;
  log: Logger;
  home: string;
  timezone: string;
  keepRuns: number;
}

export interface GorillaView {
  id: string;
  name: string;
  display_name: string;
  description: string;
  schedule: string;
  timezone: string;
  state: GorillaStatus;
  /** The same as `state`: DESIGN §6's name for it. */
  status: GorillaStatus;
  /** The next fire while unleashed; null while caged. */
  next_run_at: string | null;
  last_run: GorillaRunRecord | null;
  moves: string[];
  source: "bundled" | "user";
}

export type GorillaRuntime = ReturnType<typeof createGorillaRuntime>;

export function createGorillaRuntime(options: RuntimeOptions) {
  const { ring, events, log } = options;
  const entries = new Map<string, Entry>();
  /** Fighter name → its gorilla, for the hooks. */
  const byFighter = new Map<string, Entry>();
  let problems: GorillaProblem[] = [];
  let stopped = false;
  let started: Promise<void> | undefined;
  let loaded: (value: Promise<void>) => void = () => undefined;
  /** Settles once `start` has loaded the gorillas: requests before that wait for it. */
  const ready = new Promise<void>((resolve) => {
    loaded = resolve;
  });

  const cycleDeps: CycleDeps = {
    ring,
    events,
    log,
    timezone: options.timezone,
    fighter: (gorilla) => ensureFighter(entryOf(gorilla.name)),
    fighterGone: (gorilla) => {
      entryOf(gorilla.name).fighter = undefined;
    },
    began: (gorilla, run) => {
      entryOf(gorilla.name).last_run = run;
    },
    ended: (gorilla, run) => recorded(entryOf(gorilla.name), run),
  };

  function entryOf(name: string): Entry {
    const entry = entries.get(name);
    if (!entry) {
      const problem = problems.find((p) => p.file.split(/[\\/]/).at(-2) === name);
      throw new SparError(
        "GORILLA_NOT_FOUND",
        problem
          ? `the gorilla "${name}" did not load: ${problem.error}`
          : `no gorilla named "${name}"; spar gorilla list shows them`,
        { gorilla: name },
      );
    }
    return entry;
  }

  async function load(): Promise<void> {
    const abandoned = await ring.gorillas.runs.abandon(new Date().toISOString());
    if (abandoned > 0)
      log.warn("gorilla runs left running by a stopped daemon were recorded failed", { abandoned });
    const moves = new Map((await ring.moves.list()).map((m) => [m.name, m.capability]));
    const loaded = loadGorillas(
      [
        { dir: join(PACKAGE_ROOT, "gorillas"), source: "bundled" },
        { dir: join(options.home, "gorillas"), source: "user" },
      ],
      { moves, timezone: options.timezone },
    );
    problems = loaded.problems;
    for (const problem of problems) log.warn("a gorilla did not load; it is skipped", { ...problem });
    const states = new Map((await ring.gorillas.states()).map((s) => [s.name, s]));
    const now = new Date();
    for (const gorilla of loaded.gorillas) {
      const state = states.get(gorilla.name);
      const entry: Entry = { gorilla, desired: state?.desired ?? "caged", recorded: 0 };
      entries.set(gorilla.name, entry);
      byFighter.set(fighterName(gorilla.name), entry);
      entry.last_run = (await ring.gorillas.runs.list(gorilla.name, { limit: 1 }))[0];
      await ring.gorillas.runs.prune(gorilla.name, options.keepRuns);
      if (!state || entry.desired !== "unleashed") continue;
      arm(entry);
      if (catchUp(gorilla.settings.catch_up, missedFire(gorilla.schedule.next, state, now))) {
        log.info("gorilla missed a fire while the daemon was down: one catch-up cycle", {
          gorilla: gorilla.name,
        });
        await ring.gorillas.recordFire(gorilla.name, now.toISOString());
        begin(entry, "catch_up").catch(() => undefined);
      }
    }
    log.info("gorillas loaded", {
      gorillas: entries.size,
      unleashed: [...entries.values()].filter((e) => e.desired === "unleashed").length,
      problems: problems.length,
    });
  }

  /** Sets the timer for the gorilla's next fire (or none while caged or stopping). */
  function arm(entry: Entry, after = new Date()): void {
    clearTimeout(entry.timer);
    entry.timer = undefined;
    entry.next = undefined;
    if (stopped || entry.desired !== "unleashed") return;
    const next = entry.gorilla.schedule.next(after);
    if (!next) return;
    entry.next = next;
    wait(entry, next);
  }

  function wait(entry: Entry, at: Date): void {
    const delay = Math.min(MAX_DELAY_MS, Math.max(0, at.getTime() - Date.now()));
    entry.timer = setTimeout(() => {
      // A timer may wake a millisecond early, or a far fire was cut to setTimeout's longest delay.
      if (Date.now() < at.getTime()) return wait(entry, at);
      fire(entry, at);
    }, delay);
    entry.timer.unref();
  }

  /** A fire due at `at`: the next one is armed first, so a slow store never shifts the rhythm. */
  function fire(entry: Entry, at: Date): void {
    // Fires a busy process woke too late for are not made up for: the next is after now.
    arm(entry, new Date(Math.max(at.getTime(), Date.now())));
    const decision = onFire(entry.cycle);
    const name = entry.gorilla.name;
    if (decision.run) begin(entry, "schedule", at).catch(() => undefined);
    void (async () => {
      await ring.gorillas.recordFire(name, at.toISOString());
      if (decision.run) return;
      const run = await ring.gorillas.runs.skipped({
        gorilla: name,
        at: at.toISOString(),
        reason: decision.reason,
      });
      recorded(entry, run);
    })().catch((err: unknown) =>
      log.warn("a gorilla fire could not be recorded", { gorilla: name, error: String(err) }),
    );
  }

  /** Starts a cycle now; resolves with the run once it is recorded started. */
  function begin(entry: Entry, trigger: GorillaRunTrigger, scheduledAt?: Date): Promise<GorillaRunRecord> {
    const { cycle, started } = startCycle(entry.gorilla, trigger, cycleDeps, scheduledAt);
    entry.cycle = cycle;
    void cycle.done.finally(() => {
      if (entry.cycle === cycle) entry.cycle = undefined;
    });
    return started;
  }

  function recorded(entry: Entry, run: GorillaRunRecord): void {
    if (!entry.last_run || run.started_at >= entry.last_run.started_at || run.id === entry.last_run.id) {
      entry.last_run = run;
    }
    entry.recorded += 1;
    if (entry.recorded % PRUNE_EVERY !== 0) return;
    ring.gorillas.runs
      .prune(entry.gorilla.name, options.keepRuns)
      .catch((err: unknown) => log.warn("gorilla runs could not be pruned", { error: String(err) }));
  }

  function ensureFighter(entry: Entry): Promise<string> {
    const name = fighterName(entry.gorilla.name);
    entry.fighter ??= (async () => {
      try {
        const existing = await ring.fighters.manifest(name);
        warnIfStale(entry.gorilla, existing);
      } catch (err) {
        if (!isSparError(err, "FIGHTER_NOT_FOUND")) throw err;
        await ring.fighters.spawn({ manifest: fighterManifest(entry.gorilla) });
      }
      return name;
    })().catch((err: unknown) => {
      entry.fighter = undefined;
      throw err;
    });
    return entry.fighter;
  }

  /**
   * A fighter outlives edits of its GORILLA.toml (its memories are its own). The system prompt and
   * the moves follow the file at every call (see index.ts); grants and model are the fighter's.
   */
  function warnIfStale(
    gorilla: LoadedGorilla,
    manifest: { capabilities?: { type: string }[]; model?: unknown },
  ) {
    const wanted = fighterManifest(gorilla);
    const types = (m: { capabilities?: { type: string }[] }) =>
      (m.capabilities ?? [])
        .map((c) => c.type)
        .sort()
        .join(",");
    if (types(manifest) === types(wanted) && JSON.stringify(manifest.model) === JSON.stringify(wanted.model))
      return;
    log.warn(
      "a gorilla's fighter was spawned from an earlier GORILLA.toml: its grants or model differ from the file's. " +
        "To apply them, kill the fighter (its memories go with it) and it is spawned again at the next cycle",
      { gorilla: gorilla.name, fighter: fighterName(gorilla.name) },
    );
  }

  function view(entry: Entry): GorillaView {
    const { gorilla } = entry;
    const state = statusOf(entry.desired, entry.cycle !== undefined);
    return {
      id: gorilla.name,
      name: gorilla.name,
      display_name: gorilla.display_name,
      description: gorilla.description,
      schedule: gorilla.schedule.text,
      timezone: gorilla.schedule.timezone,
      state,
      status: state,
      next_run_at: entry.next?.toISOString() ?? null,
      last_run: entry.last_run ?? null,
      moves: gorilla.moves,
      source: gorilla.source,
    };
  }

  /** Waits for a cycle to be recorded ended, at most WIND_DOWN_MS. */
  async function windDown(cycle: Cycle): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([cycle.done, new Promise((r) => (timer = setTimeout(r, WIND_DOWN_MS)))]);
    clearTimeout(timer);
  }

  const whenReady = () => ready;

  return {
    /** Loads the gorillas and brings the unleashed ones back (the store is open). */
    start(): Promise<void> {
      if (!started) {
        started = load();
        loaded(started);
      }
      return started;
    },

    async list(): Promise<{ gorillas: GorillaView[]; problems: GorillaProblem[] }> {
      await whenReady();
      return { gorillas: [...entries.values()].map(view), problems };
    },

    async get(name: string) {
      await whenReady();
      const entry = entryOf(name);
      const { gorilla } = entry;
      return {
        ...view(entry),
        fighter: fighterName(gorilla.name),
        capabilities: gorilla.capabilities,
        settings: gorilla.settings,
        ...(gorilla.model ? { model: gorilla.model } : {}),
        running_run_id: entry.cycle?.run_id ?? null,
        file: gorilla.file,
      };
    },

    async unleash(name: string): Promise<GorillaView> {
      await whenReady();
      const entry = entryOf(name);
      if (entry.desired === "unleashed") {
        throw new SparError("CONFLICT", `the gorilla "${name}" is already unleashed`, { gorilla: name });
      }
      await ring.gorillas.setDesired(name, "unleashed");
      entry.desired = "unleashed";
      arm(entry);
      events.publish({
        kind: "gorilla.unleashed",
        gorilla: name,
        next_run_at: entry.next?.toISOString() ?? null,
      });
      return view(entry);
    },

    /** Cages a gorilla: no more fires, and a running cycle is aborted (answered once it is recorded). */
    async cage(name: string): Promise<GorillaView & { aborted_run_id: string | null }> {
      await whenReady();
      const entry = entryOf(name);
      const cycle = entry.cycle;
      if (entry.desired === "caged" && !cycle) {
        throw new SparError("CONFLICT", `the gorilla "${name}" is already caged`, { gorilla: name });
      }
      await ring.gorillas.setDesired(name, "caged");
      entry.desired = "caged";
      arm(entry);
      if (cycle) stopCycle(cycle, { outcome: "aborted", reason: "was caged" });
      events.publish({ kind: "gorilla.caged", gorilla: name, aborted_run_id: cycle?.run_id ?? null });
      if (cycle) await windDown(cycle);
      return { ...view(entry), aborted_run_id: cycle?.run_id ?? null };
    },

    /** One cycle now, whatever the state: answered once its run is recorded started. */
    async run(name: string): Promise<GorillaRunRecord> {
      await whenReady();
      const entry = entryOf(name);
      if (entry.cycle) {
        const which = entry.cycle.run_id ? ` (run ${entry.cycle.run_id})` : "";
        throw new SparError("CONFLICT", `the gorilla "${name}" is already running a cycle${which}`, {
          gorilla: name,
        });
      }
      return begin(entry, "manual");
    },

    async runs(name: string, page: { limit: number; before?: string }): Promise<GorillaRunRecord[]> {
      await whenReady();
      entryOf(name);
      return ring.gorillas.runs.list(name, page);
    },

    async runRecord(name: string, id: string): Promise<GorillaRunRecord> {
      await whenReady();
      entryOf(name);
      const run = await ring.gorillas.runs.get(id);
      if (!run || run.gorilla !== name) {
        throw new SparError("NOT_FOUND", `the gorilla "${name}" has no run ${id}`, {
          gorilla: name,
          run_id: id,
        });
      }
      return run;
    },

    /** The gorilla a fighter runs for, and its cycle in progress, if any (for the hooks). */
    ofFighter(name: string): { gorilla: LoadedGorilla; cycle: Cycle | undefined } | undefined {
      const entry = byFighter.get(name);
      return entry ? { gorilla: entry.gorilla, cycle: entry.cycle } : undefined;
    },

    /** Shutdown: no more fires; running cycles are aborted and recorded before the store closes. */
    async stop(): Promise<void> {
      stopped = true;
      const running: Cycle[] = [];
      for (const entry of entries.values()) {
        clearTimeout(entry.timer);
        entry.timer = undefined;
        if (entry.cycle) running.push(entry.cycle);
      }
      for (const cycle of running)
        stopCycle(cycle, { outcome: "aborted", reason: "was stopped with the daemon" });
      await Promise.all(running.map(windDown));
    },
  };
}
