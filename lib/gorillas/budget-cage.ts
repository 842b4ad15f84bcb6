/**
 * A gorilla caged by its budget (issue 31): a cycle that a budget stopped (BUDGET_EXCEEDED) cages
 * its gorilla with the reason, recorded in the `cages` collection with the moment the budget's
 * period turns; then it is unleashed by itself. An operator who cages or unleashes it meanwhile
 * takes it over: the record goes, and nothing is undone behind their back. Raising the budget in
 * GORILLA.toml (`spar gorilla reload`) and unleashing it works at once. Records outlive restarts:
 * at start each is unleashed if its time has come, else waited for.
 */
import type { Collection, Logger } from "../../sdk/index.js";

export interface BudgetCageRecord extends Record<string, unknown> {
  name: string;
  budget: string;
  reason: string;
  /** When the budget's period turns (ISO): the gorilla is unleashed then. */
  until: string;
  at: string;
}

/** A timer at most this far ahead: longer delays overflow Node's timers, so they are re-armed. */
const MAX_WAIT_MS = 24 * 3_600_000;

export interface BudgetCageDeps {
  cages: Collection<BudgetCageRecord>;
  cage(name: string): Promise<unknown>;
  unleash(name: string): Promise<unknown>;
  /** Told whenever a gorilla's budget cage starts or ends (the view shows it). */
  changed(name: string, cage: BudgetCageRecord | undefined): void;
  log: Logger;
  now?: () => number;
}

export function createBudgetCages(deps: BudgetCageDeps) {
  const now = deps.now ?? Date.now;
  const timers = new Map<string, NodeJS.Timeout>();

  function wait(record: BudgetCageRecord): void {
    clearTimeout(timers.get(record.name));
    const left = Date.parse(record.until) - now();
    const timer = setTimeout(
      () => {
        timers.delete(record.name);
        if (Date.parse(record.until) > now()) return wait(record);
        void release(record).catch((err: unknown) =>
          deps.log.warn("a gorilla caged by its budget could not be unleashed", {
            gorilla: record.name,
            error: String(err),
          }),
        );
      },
      Math.max(0, Math.min(left, MAX_WAIT_MS)),
    );
    timer.unref();
    timers.set(record.name, timer);
  }

  /** The period turned: unleashed, unless an operator took it over (the record is gone then). */
  async function release(record: BudgetCageRecord): Promise<void> {
    const still = await deps.cages.get(record.name);
    if (!still || still.until !== record.until) return;
    await deps.cages.delete(record.name);
    deps.changed(record.name, undefined);
    await deps.unleash(record.name).catch(() => undefined);
    deps.log.info("a gorilla caged by its budget is unleashed: its budget's period turned", {
      gorilla: record.name,
      budget: record.budget,
    });
  }

  return {
    /** A cycle was stopped by `budget` until `until`: caged with the reason. */
    async caged(name: string, budget: string, reason: string, until: string): Promise<void> {
      const record: BudgetCageRecord = { name, budget, reason, until, at: new Date(now()).toISOString() };
      await deps.cages.put(record);
      deps.changed(name, record);
      // Already caged by its operator meanwhile: CONFLICT, and the cage stands either way.
      await deps.cage(name).catch(() => undefined);
      wait(record);
    },
    /** The operator caged or unleashed it: the budget's cage is theirs now. */
    async forget(name: string): Promise<void> {
      clearTimeout(timers.get(name));
      timers.delete(name);
      if (await deps.cages.get(name)) {
        await deps.cages.delete(name);
        deps.changed(name, undefined);
      }
    },
    /** At start: every recorded budget cage, unleashed now or waited for. */
    async start(): Promise<BudgetCageRecord[]> {
      const all = await deps.cages.find({ limit: 1000 });
      for (const record of all) {
        deps.changed(record.name, record);
        wait(record);
      }
      return all;
    },
    stop(): void {
      for (const timer of timers.values()) clearTimeout(timer);
      timers.clear();
    },
  };
}
