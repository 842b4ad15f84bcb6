/**
 * One gorilla cycle: a run recorded `running`, a fresh bout of the gorilla's own fighter with the
 * task, the timeout armed, and the run recorded once the turn has wound down (so no model call of
 * the cycle can start after its run has ended). Cage, timeout and the token budget all stop a cycle
 * the same way: `stop` records why and aborts the turn's signal, which the message path passes to
 * the model call and every move.
 */

import {
  cancellation,
  type EventBus,
  type FighterManifest,
  isSparError,
  type Logger,
  type RingServices,
  type Usage,
} from "../../sdk/index.js";
import { observe, observing } from "../../sdk/observe.js";
import { type CycleBudget, createCycleBudget } from "./budget.js";
import { cycleMessage, cycleOutcome, type Stop } from "./lifecycle.js";
import type { LoadedGorilla } from "./manifest.js";
import type { GorillaRecords, GorillaRunRecord, GorillaRunTrigger } from "./records.js";
import { machineTimezone } from "./schedule.js";

/** A cycle in progress, as the hooks and the lifecycle see it. */
export interface Cycle {
  trigger: GorillaRunTrigger;
  controller: AbortController;
  budget: CycleBudget;
  /** Set once the run is recorded. */
  run_id?: string;
  /** True once its message was handed to the fighter: from then on its model calls are the cycle's. */
  sent: boolean;
  /** The bout the cycle runs in, seen at its first model call. */
  bout_id?: string;
  /** Why it was stopped, when it was: the first stop wins. */
  stop?: Stop;
  /** The first call of the cycle that needed an approval no one could give (APPROVAL_REQUIRED). */
  needsApproval?: string;
  /** A budget stopped the cycle (BUDGET_EXCEEDED): which, why, and when its period turns. */
  overBudget?: { budget: string; reason: string; until: string };
  /** Settles once the run is recorded ended. */
  done: Promise<void>;
}

/** The fighter a gorilla's cycles run as. */
export function fighterName(gorilla: string): string {
  return `gorilla-${gorilla}`;
}

/** The fighter manifest a gorilla's fighter is spawned from. */
export function fighterManifest(gorilla: LoadedGorilla): FighterManifest {
  return {
    name: fighterName(gorilla.name),
    description: gorilla.description,
    system_prompt: gorilla.system_prompt,
    capabilities: gorilla.capabilities.map((type) => ({ type })),
    max_iterations: gorilla.settings.max_iterations,
    ...(gorilla.model ? { model: gorilla.model } : {}),
  };
}

/** Stops a cycle: records why (the first reason wins) and aborts its turn. */
export function stopCycle(cycle: Cycle, stop: Stop): void {
  if (cycle.stop) return;
  cycle.stop = stop;
  cycle.controller.abort(cancellation(`the gorilla's cycle ${stop.reason}`));
}

export interface CycleDeps {
  ring: RingServices;
  records: GorillaRecords;
  events: EventBus;
  log: Logger;
  /** `[gorillas] timezone`; undefined for the machine's. */
  timezone: string | undefined;
  /** The gorilla's fighter, spawned if missing; its name. */
  fighter(gorilla: LoadedGorilla): Promise<string>;
  /** The fighter was found gone (killed): spawn it again next time. */
  fighterGone(gorilla: LoadedGorilla): void;
  /** The run was recorded started, then ended. */
  began(gorilla: LoadedGorilla, run: GorillaRunRecord): void;
  ended(gorilla: LoadedGorilla, run: GorillaRunRecord): void;
  /** A budget stopped the cycle: called once its run is recorded (the gorilla is caged then). */
  overBudget?(gorilla: LoadedGorilla, over: NonNullable<Cycle["overBudget"]>): void;
}

/**
 * Starts a cycle. `started` settles when the run is recorded (with the run, or with the store's
 * error, then no cycle runs); `cycle.done` when it has ended and been recorded.
 */
export function startCycle(
  gorilla: LoadedGorilla,
  trigger: GorillaRunTrigger,
  deps: CycleDeps,
  /** The fire it answers, when the schedule started it. */
  scheduledAt?: Date,
): { cycle: Cycle; started: Promise<GorillaRunRecord> } {
  const cycle: Cycle = {
    trigger,
    controller: new AbortController(),
    budget: createCycleBudget(gorilla.settings),
    sent: false,
    done: Promise.resolve(),
  };
  let begun: (run: GorillaRunRecord) => void = () => undefined;
  let refused: (err: unknown) => void = () => undefined;
  const started = new Promise<GorillaRunRecord>((resolve, reject) => {
    begun = resolve;
    refused = reject;
  });
  cycle.done = (async () => {
    let run: GorillaRunRecord;
    try {
      // The clock's time, given: the store's own clock keeps its times apart by a millisecond each,
      // so under load it runs ahead of the real one.
      run = await deps.records.runs.begin({
        gorilla: gorilla.name,
        trigger,
        started_at: new Date().toISOString(),
      });
    } catch (err) {
      refused(err);
      return;
    }
    cycle.run_id = run.id;
    deps.began(gorilla, run);
    deps.events.publish({
      kind: "gorilla.rampage.started",
      gorilla: gorilla.name,
      run_id: run.id,
      trigger,
      started_at: run.started_at,
      ...(scheduledAt ? { scheduled_at: scheduledAt.toISOString() } : {}),
    });
    begun(run);
    // A run is a measured point (README "Metrics and traces"), free while none observes.
    const ended = await (observing()
      ? observe(
          {
            kind: "gorilla_run",
            gorilla: gorilla.name,
            trigger,
            lateness_s: scheduledAt
              ? Math.max(0, Date.parse(run.started_at) - scheduledAt.getTime()) / 1000
              : 0,
          },
          () => runCycle(gorilla, cycle, run, deps),
          (value) => ({ outcome: value?.outcome ?? "failed" }),
        )
      : runCycle(gorilla, cycle, run, deps));
    deps.ended(gorilla, ended);
    if (cycle.overBudget) deps.overBudget?.(gorilla, cycle.overBudget);
    deps.events.publish({
      kind: "gorilla.rampage.completed",
      gorilla: gorilla.name,
      run_id: ended.id,
      trigger,
      outcome: ended.outcome as "ok" | "failed" | "aborted",
      usage: ended.usage,
      ...(ended.error ? { error: ended.error } : {}),
      ...(ended.bout_id ? { bout_id: ended.bout_id } : {}),
    });
  })().catch((err: unknown) => {
    refused(err);
    deps.log.error("gorilla cycle could not be recorded", { gorilla: gorilla.name, error: String(err) });
  });
  return { cycle, started };
}

async function runCycle(
  gorilla: LoadedGorilla,
  cycle: Cycle,
  run: GorillaRunRecord,
  deps: CycleDeps,
): Promise<GorillaRunRecord> {
  const { timeout_s } = gorilla.settings;
  const timer = setTimeout(
    () => stopCycle(cycle, { outcome: "failed", reason: `timed out after ${timeout_s} s` }),
    timeout_s * 1000,
  );
  timer.unref();
  let turn: Parameters<typeof cycleOutcome>[1];
  let reply: { response: string; usage: Usage; bout_id: string } | undefined;
  try {
    // The turn's set-up runs after every timer due now has fired and recorded its run: gorillas
    // that fire together start on time, rather than each behind the others' set-up.
    await new Promise((resolve) => setImmediate(resolve));
    // Caged while the run was being recorded: the fighter is never asked.
    if (cycle.controller.signal.aborted) throw cycle.controller.signal.reason;
    const fighter = await deps.fighter(gorilla);
    if (cycle.controller.signal.aborted) throw cycle.controller.signal.reason;
    const text = cycleMessage(gorilla, run, new Date(), deps.timezone ?? machineTimezone());
    cycle.sent = true;
    const result = await deps.ring.fighters.message(fighter, text, {
      bout: "new",
      // Its own origin: a cycle's bout is never the latest a user's `spar chat` continues.
      origin: `gorilla:${gorilla.name}`,
      signal: cycle.controller.signal,
      // No Creed reflection or compaction after the reply: the cycle's model calls are all its turn's.
      aftercare: false,
    });
    reply = result;
    turn = { ok: true, stop_reason: result.stop_reason, iterations: result.iterations };
  } catch (err) {
    if (isSparError(err, "FIGHTER_NOT_FOUND")) deps.fighterGone(gorilla);
    if (isSparError(err, "BUDGET_EXCEEDED")) {
      const { budget, resets_at } = err.extra as { budget?: string; resets_at?: string };
      if (budget && resets_at) cycle.overBudget = { budget, reason: err.message, until: resets_at };
    }
    turn = {
      ok: false,
      message: err instanceof Error ? err.message : String(err),
      ...(isSparError(err) ? { code: err.code } : {}),
    };
  } finally {
    clearTimeout(timer);
  }
  const end = cycleOutcome(cycle.stop, turn, cycle.needsApproval);
  const bout_id = reply?.bout_id ?? cycle.bout_id;
  const usage = reply?.usage ?? (await usageOf(deps.ring, bout_id));
  return deps.records.runs.finish(run.id, {
    outcome: end.outcome,
    finished_at: new Date().toISOString(),
    usage,
    ...(reply ? { output: reply.response } : {}),
    ...(end.error ? { error: end.error } : {}),
    ...(bout_id ? { bout_id } : {}),
  });
}

/** What a cycle that did not complete spent: its bout's turns as recorded (one, in a fresh bout). */
async function usageOf(ring: RingServices, boutId: string | undefined): Promise<Usage> {
  const usage = { input_tokens: 0, output_tokens: 0 };
  if (!boutId) return usage;
  for (const turn of await ring.bouts.turns(boutId).catch(() => [])) {
    usage.input_tokens += turn.usage.input_tokens;
    usage.output_tokens += turn.usage.output_tokens;
  }
  return usage;
}
