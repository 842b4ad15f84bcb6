/**
 * The gorillas of this daemon and their lifecycle (DESIGN §11): CAGED by default; unleashing arms
 * the gorilla's schedule, each fire starts a cycle (RAMPAGING) or, while one runs, is recorded
 * `skipped`; caging disarms it and aborts the running cycle. What the operator asked for is kept in
 * the store, so a restart brings every unleashed gorilla back on its schedule, with the catch-up
 * policy deciding about fires missed while the daemon was down.
 *
 * When a gorilla fires is the `Firing`'s business (firing.ts): timers in one process
 * (scheduler-croner), BullMQ job schedulers across nodes (scheduler-bullmq).
 */
import { join } from "node:path";
import {
  type Collection,
  type EventBus,
  type Logger,
  PACKAGE_ROOT,
  type RingServices,
  SparError,
} from "../../sdk/index.js";
import { createGorillaActions, windDown } from "./actions.js";
import { type BudgetCageRecord, createBudgetCages } from "./budget-cage.js";
import { type Cycle, type CycleDeps, fighterName, startCycle, stopCycle } from "./cycle.js";
import { ensureFighter } from "./fighter.js";
import type { CycleSlot, Firing } from "./firing.js";
import { catchUp, missedFire, onFire } from "./lifecycle.js";
import { type GorillaProblem, type LoadedGorilla, loadGorillas } from "./manifest.js";
import type { GorillaDesired, GorillaRecords, GorillaRunRecord, GorillaRunTrigger } from "./records.js";
import { type GorillaEntry, type GorillaView, viewOf } from "./view.js";

export type { GorillaEntry, GorillaView } from "./view.js";

/** Runs recorded between two prunes of a gorilla's history. */
const PRUNE_EVERY = 100;

export interface RuntimeOptions {
  ring: RingServices;
  /** The gorillas' states and runs, in the scheduler plugin's collections. */
  records: GorillaRecords;
  events: EventBus;
  log: Logger;
  home: string;
  /** `[gorillas] timezone`; undefined for the machine's. */
  timezone: string | undefined;
  keepRuns: number;
  firing: Firing;
  /** Gorillas caged by a budget, until its period turns (budget-cage.ts); none: never caged so. */
  cages?: Collection<BudgetCageRecord>;
}

export type GorillaRuntime = ReturnType<typeof createGorillaRuntime>;

/** The gorilla runtime on a firing: the routes' and the hooks' view of the gorillas. */
export function createGorillaRuntime(options: RuntimeOptions) {
  const { ring, records, events, log, firing } = options;
  const entries = new Map<string, GorillaEntry>();
  /** Fighter name → its gorilla, for the hooks. */
  const byFighter = new Map<string, GorillaEntry>();
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
    records,
    events,
    log,
    timezone: options.timezone,
    fighter: (gorilla) => ensureFighter(entryOf(gorilla.name), gorilla, { ring, log }),
    fighterGone: (gorilla) => {
      entryOf(gorilla.name).fighter = undefined;
    },
    began: (gorilla, run) => {
      entryOf(gorilla.name).last_run = run;
    },
    ended: (gorilla, run) => recorded(entryOf(gorilla.name), run),
    overBudget: (gorilla, over) => {
      const cycle = entries.get(gorilla.name)?.cycle;
      // After the cycle has wound down: caging waits for a running cycle, and this is inside it.
      void Promise.resolve(cycle?.done)
        .then(() => budgetCages?.caged(gorilla.name, over.budget, over.reason, over.until))
        .catch((err: unknown) =>
          log.warn("a gorilla over its budget could not be caged", {
            gorilla: gorilla.name,
            error: String(err),
          }),
        );
    },
  };

  function entryOf(name: string): GorillaEntry {
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

  /** Reads the gorilla folders (bundled, then the user's) as they are now. */
  async function readFolders(): Promise<LoadedGorilla[]> {
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
    return loaded.gorillas;
  }

  async function load(): Promise<void> {
    await firing.start({ fire, changed, gorilla: (name) => entries.get(name)?.gorilla, records });
    const loaded = { gorillas: await readFolders() };
    const states = new Map((await records.states()).map((s) => [s.name, s]));
    const now = new Date();
    for (const gorilla of loaded.gorillas) {
      const state = states.get(gorilla.name);
      const entry: GorillaEntry = { gorilla, desired: state?.desired ?? "caged", recorded: 0 };
      entries.set(gorilla.name, entry);
      byFighter.set(fighterName(gorilla.name), entry);
      entry.last_run = (await records.runs.list(gorilla.name, { limit: 1 }))[0];
      await records.runs.prune(gorilla.name, options.keepRuns);
      if (!state || entry.desired !== "unleashed") continue;
      await firing.arm(gorilla, { restart: true });
      if (
        firing.catchUpAtStart &&
        catchUp(gorilla.settings.catch_up, missedFire(gorilla.schedule.next, state, now))
      ) {
        log.info("gorilla missed a fire while the daemon was down: one catch-up cycle", {
          gorilla: gorilla.name,
        });
        await records.recordFire(gorilla.name, now.toISOString());
        begin(entry, "catch_up").started.catch(() => undefined);
      }
    }
    log.info("gorillas loaded", {
      gorillas: entries.size,
      unleashed: [...entries.values()].filter((e) => e.desired === "unleashed").length,
      problems: problems.length,
    });
  }

  /**
   * Reads the gorilla folders again (`spar gorilla reload`): a new or mended file is taken in (armed
   * when the store says it was unleashed), a changed one replaces its gorilla (re-armed on its new
   * schedule; a running cycle finishes as it began), and one that is gone or no longer loads is
   * disarmed and dropped, its running cycle aborted. The desired states in the store are untouched,
   * so a gorilla dropped for a broken file comes back as it was once the file is mended.
   */
  async function reload(): Promise<{ added: string[]; removed: string[]; kept: string[] }> {
    await whenReady();
    if (stopped) throw new SparError("CONFLICT", "the daemon is stopping; gorillas are not reloaded");
    const fresh = await readFolders();
    const names = new Set(fresh.map((g) => g.name));
    const result = { added: [] as string[], removed: [] as string[], kept: [] as string[] };
    for (const [name, entry] of [...entries]) {
      if (names.has(name)) continue;
      await firing.disarm(entry.gorilla);
      if (entry.cycle) {
        stopCycle(entry.cycle, {
          outcome: "aborted",
          reason: "its GORILLA.toml was removed or no longer loads",
        });
        await windDown(entry.cycle.done);
      }
      entries.delete(name);
      byFighter.delete(fighterName(name));
      result.removed.push(name);
    }
    for (const gorilla of fresh) {
      const entry = entries.get(gorilla.name);
      if (entry) {
        const armed = entry.desired === "unleashed";
        if (armed) await firing.disarm(entry.gorilla);
        entry.gorilla = gorilla;
        if (armed) await firing.arm(gorilla, { restart: false });
        result.kept.push(gorilla.name);
        continue;
      }
      const state = await records.state(gorilla.name);
      const added: GorillaEntry = { gorilla, desired: state?.desired ?? "caged", recorded: 0 };
      added.last_run = (await records.runs.list(gorilla.name, { limit: 1 }))[0];
      entries.set(gorilla.name, added);
      byFighter.set(fighterName(gorilla.name), added);
      if (added.desired === "unleashed") await firing.arm(gorilla, { restart: true });
      result.added.push(gorilla.name);
    }
    // Listed by name, as at start.
    const sorted = [...entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    entries.clear();
    for (const [name, entry] of sorted) entries.set(name, entry);
    log.info("gorillas reloaded", { ...result, problems: problems.length });
    return result;
  }

  /** A fire due at `at`: a cycle, or a skipped run; settles once either is recorded ended. */
  async function fire(name: string, at: Date, trigger: "schedule" | "catch_up" = "schedule"): Promise<void> {
    const entry = entries.get(name);
    if (!entry || stopped) return;
    let decision = onFire(entry.cycle);
    let slot: CycleSlot | undefined;
    if (decision.run && firing.claim) {
      const claimed = await firing.claim(name).catch((err: unknown) => {
        log.warn("a gorilla fire could not claim its cycle", { gorilla: name, error: String(err) });
        return undefined;
      });
      if (!claimed) return;
      if ("busy" in claimed) decision = onFire(claimed.busy ? { run_id: claimed.busy } : {});
      else if (entry.cycle || stopped || !(await stillUnleashed(name))) {
        // Caged on another node before the slot was taken (a cage after it aborts the cycle).
        await claimed.release();
        if (stopped || !entry.cycle) return;
        decision = onFire(entry.cycle);
      } else slot = claimed;
    }
    const cycle = decision.run ? begin(entry, trigger, at, slot).cycle : undefined;
    await (async () => {
      await records.recordFire(name, at.toISOString());
      if (decision.run) return;
      const run = await records.runs.skipped({
        gorilla: name,
        at: at.toISOString(),
        reason: decision.reason,
      });
      recorded(entry, run);
    })().catch((err: unknown) =>
      log.warn("a gorilla fire could not be recorded", { gorilla: name, error: String(err) }),
    );
    await cycle?.done;
  }

  /** The store's desired state is still `unleashed` (read once this node holds the cycle slot). */
  async function stillUnleashed(name: string): Promise<boolean> {
    let desired: GorillaDesired;
    try {
      desired = (await records.state(name))?.desired ?? "caged";
    } catch (err) {
      log.warn("a gorilla fire could not read its desired state; it runs no cycle", {
        gorilla: name,
        error: String(err),
      });
      return false;
    }
    const entry = entries.get(name);
    if (entry) entry.desired = desired;
    return desired === "unleashed";
  }

  /** Another node changed the desired state: it is followed here. */
  function changed(name: string, desired: GorillaDesired): void {
    const entry = entries.get(name);
    if (!entry) return;
    entry.desired = desired;
    if (desired === "caged" && entry.cycle)
      stopCycle(entry.cycle, { outcome: "aborted", reason: "was caged" });
  }

  /** Starts a cycle now; `started` settles with the run once it is recorded started. */
  function begin(
    entry: GorillaEntry,
    trigger: GorillaRunTrigger,
    scheduledAt?: Date,
    slot?: CycleSlot,
  ): { cycle: Cycle; started: Promise<GorillaRunRecord> } {
    const { cycle, started } = startCycle(entry.gorilla, trigger, cycleDeps, scheduledAt);
    entry.cycle = cycle;
    started.then((run) => slot?.bind(run.id)).catch(() => undefined);
    void cycle.done.finally(() => {
      if (entry.cycle === cycle) entry.cycle = undefined;
      slot?.release().catch((err: unknown) =>
        log.warn("a gorilla's cycle slot could not be released", {
          gorilla: entry.gorilla.name,
          error: String(err),
        }),
      );
    });
    return { cycle, started };
  }

  function recorded(entry: GorillaEntry, run: GorillaRunRecord): void {
    if (!entry.last_run || run.started_at >= entry.last_run.started_at || run.id === entry.last_run.id) {
      entry.last_run = run;
    }
    entry.recorded += 1;
    if (entry.recorded % PRUNE_EVERY !== 0) return;
    records.runs
      .prune(entry.gorilla.name, options.keepRuns)
      .catch((err: unknown) => log.warn("gorilla runs could not be pruned", { error: String(err) }));
  }

  const view = (entry: GorillaEntry): GorillaView => viewOf(entry, firing);
  const whenReady = () => ready;
  const actions = createGorillaActions({
    records,
    events,
    firing,
    entry: async (name) => {
      await whenReady();
      return entryOf(name);
    },
    view,
    begin,
    stopped: () => stopped,
  });

  const budgetCages =
    options.cages &&
    createBudgetCages({
      cages: options.cages,
      cage: (name) => actions.cage(name),
      unleash: (name) => actions.unleash(name),
      changed: (name, cage) => {
        const entry = entries.get(name);
        if (entry) entry.budgetCage = cage ? { reason: cage.reason, until: cage.until } : undefined;
      },
      log,
    });

  return {
    /** Loads the gorillas and brings the unleashed ones back (the store is open). */
    start(): Promise<void> {
      if (!started) {
        started = load().then(async () => {
          await budgetCages?.start();
        });
        loaded(started);
      }
      return started;
    },

    async list(): Promise<{ gorillas: GorillaView[]; problems: GorillaProblem[] }> {
      await whenReady();
      return { gorillas: [...entries.values()].map(view), problems };
    },

    /** Re-reads the gorilla folders; the list as it is then, with what came and went. */
    async reload() {
      const changes = await reload();
      return { ...changes, gorillas: [...entries.values()].map(view), problems };
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

    ...actions,
    /** The operator's unleash and cage take a budget's cage over (it is not undone at the period's turn). */
    async unleash(name: string) {
      await whenReady();
      await budgetCages?.forget(name);
      return actions.unleash(name);
    },
    async cage(name: string) {
      await whenReady();
      await budgetCages?.forget(name);
      return actions.cage(name);
    },

    async runs(name: string, page: { limit: number; before?: string }): Promise<GorillaRunRecord[]> {
      await whenReady();
      entryOf(name);
      return records.runs.list(name, page);
    },

    async runRecord(name: string, id: string): Promise<GorillaRunRecord> {
      await whenReady();
      entryOf(name);
      const run = await records.runs.get(id);
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
      budgetCages?.stop();
      // The firing stops first (no fire after this), but may wait for the cycles it started.
      const firingStopped = firing
        .stop()
        .catch((err: unknown) => log.warn("the gorilla firing did not stop cleanly", { error: String(err) }));
      const running: Cycle[] = [];
      for (const entry of entries.values()) if (entry.cycle) running.push(entry.cycle);
      for (const cycle of running)
        stopCycle(cycle, { outcome: "aborted", reason: "was stopped with the daemon" });
      await Promise.all(running.map((cycle) => windDown(cycle.done)));
      await firingStopped;
    },
  };
}
