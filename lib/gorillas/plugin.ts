/**
 * What both gorilla scheduler plugins install (kind `scheduler`): GORILLA.toml gorillas, bundled and
 * the user's, fired on their schedules, each cycle a fresh bout of the gorilla's own fighter. Besides
 * the lifecycle (runtime.ts) and the routes (routes.ts), it taps the turns of gorilla fighters:
 * before every model call the cycle's budgets are checked (a call past one is refused, and the cycle
 * stopped), the prompt is the gorilla file's current one, and the fighter is offered, and may call,
 * only the moves its GORILLA.toml declares. The plugin gives the firing (firing.ts).
 */

import { type Collection, type PluginApi, SparError, type Usage } from "../../sdk/index.js";
import { systemText } from "../prompt-prepare.js";
import type { BudgetCageRecord } from "./budget-cage.js";
import { stopCycle } from "./cycle.js";
import type { Firing } from "./firing.js";
import { createGorillaRecords, type GorillaRunTrigger } from "./records.js";
import { addGorillaRoutes } from "./routes.js";
import { createGorillaRuntime, type GorillaRuntime } from "./runtime.js";
import { parseSchedule } from "./schedule.js";

declare module "../../sdk/index.js" {
  interface SparEventMap {
    /** Unleashed: fires on its schedule from now on. */
    "gorilla.unleashed": { gorilla: string; next_run_at: string | null };
    /** Caged: no more fires; the cycle it was running, if any, is aborted. */
    "gorilla.caged": { gorilla: string; aborted_run_id: string | null };
    /** A cycle began (its run is recorded `running`); `scheduled_at` is the fire it answers. */
    "gorilla.rampage.started": {
      gorilla: string;
      run_id: string;
      trigger: GorillaRunTrigger;
      started_at: string;
      scheduled_at?: string;
    };
    /** A cycle ended and its run is recorded. */
    "gorilla.rampage.completed": {
      gorilla: string;
      run_id: string;
      trigger: GorillaRunTrigger;
      outcome: "ok" | "failed" | "aborted";
      usage: Usage;
      error?: string;
      bout_id?: string;
    };
  }
}

/** The `[gorillas]` table, as both scheduler plugins declare it. */
export interface GorillasSettings {
  timezone?: string;
  keep_runs: number;
}

/**
 * The `[gorillas]` time zone, checked; undefined when none is set: the machine's, which schedules
 * look up when they first need it (machineTimezone), so a start whose gorillas stay caged loads no
 * time-zone data.
 */
export function gorillaTimezone(settings: GorillasSettings): string | undefined {
  const { timezone } = settings;
  if (timezone === undefined) return undefined;
  try {
    parseSchedule("daily", timezone);
  } catch (err) {
    throw new SparError("CONFIG_INVALID", `[gorillas] timezone: ${(err as Error).message}`, {
      path: "gorillas.timezone",
    });
  }
  return timezone;
}

/**
 * Installs the gorilla runtime on a firing: the hooks, the routes, start at `daemon.ready` and stop
 * at `daemon.close`.
 *
 * @example
 * apply(api, { gorillas }) {
 *   installGorillas(api, gorillas, createTimerFiring(api));
 * }
 */
export function installGorillas(
  { hooks, ring, events, home, log, data }: PluginApi,
  settings: GorillasSettings,
  firing: Firing,
  timezone: string | undefined = gorillaTimezone(settings),
): GorillaRuntime {
  const records = createGorillaRecords(data, {
    requireBout: async (boutId) => {
      await ring.bouts.turns(boutId);
    },
  });
  const runtime = createGorillaRuntime({
    ring,
    records,
    events,
    log,
    home,
    timezone,
    keepRuns: settings.keep_runs,
    firing,
    ...(data.cages ? { cages: data.cages as Collection<BudgetCageRecord> } : {}),
  });

  // The gorilla's own `[budget]` (GORILLA.toml) on every model call of its cycles.
  hooks.spend.budgets.tap((rules, { fighter, origin }) => {
    const gorilla = runtime.ofFighter(fighter.name)?.gorilla;
    if (!gorilla?.budget || origin !== `gorilla:${gorilla.name}`) return rules;
    return [
      ...rules,
      {
        scope: "gorilla" as const,
        name: gorilla.name,
        key: `gorilla:${gorilla.name}`,
        limits: gorilla.budget,
        ledger: { origin },
      },
    ];
  });

  // First: the gorilla file's prompt and moves, before other plugins add to the prompt.
  hooks.turn.prepare.tap(
    (prompt, { fighter }) => {
      const mine = runtime.ofFighter(fighter.name);
      if (!mine) return prompt;
      const { gorilla } = mine;
      const own = fighter.manifest.system_prompt;
      const system =
        own !== gorilla.system_prompt && prompt.system.startsWith(own)
          ? `${gorilla.system_prompt}${prompt.system.slice(own.length)}`
          : prompt.system;
      return { ...prompt, system, tools: prompt.tools.filter((t) => gorilla.moves.includes(t.name)) };
    },
    { phase: "early" },
  );

  // Last, on the prompt as it will be sent: the cycle's budgets, before the model call starts.
  hooks.turn.prepare.tap(
    (prompt, { fighter, bout_id, dry_run }) => {
      const cycle = runtime.ofFighter(fighter.name)?.cycle;
      // A preview (spar context) starts no model call: nothing to count, nothing to stop.
      if (!cycle?.sent || dry_run) return prompt;
      cycle.bout_id ??= bout_id;
      // A cycle already stopped (caged, timed out, over budget) starts no model call.
      if (cycle.controller.signal.aborted) throw cycle.controller.signal.reason;
      const verdict = cycle.budget.admit({ ...prompt, system: systemText(prompt) });
      if (!verdict.ok) {
        stopCycle(cycle, { outcome: "failed", reason: verdict.reason });
        throw cycle.controller.signal.reason;
      }
      return prompt;
    },
    { phase: "last" },
  );

  hooks.move.beforeCall.tap((info) => {
    const gorilla = runtime.ofFighter(info.fighter.name)?.gorilla;
    if (!gorilla || gorilla.moves.includes(info.call.name)) return undefined;
    return {
      code: "CAPABILITY_DENIED",
      message: `the gorilla "${gorilla.name}" may use only the moves its GORILLA.toml declares (${gorilla.moves.join(", ") || "none"}); ${info.call.name} is not one of them`,
    };
  });

  // A call no one could answer (the approvals plugin refuses it at once in an unattended turn): the
  // run records it as failed, with what it needed, so `spar gorilla runs` shows what to allow.
  hooks.move.afterCall.tap((outcome, info) => {
    const cycle = runtime.ofFighter(info.fighter.name)?.cycle;
    if (cycle && outcome.error?.code === "APPROVAL_REQUIRED") cycle.needsApproval ??= outcome.error.message;
    return outcome;
  });

  hooks.arena.routes.tap((routes) => addGorillaRoutes(routes, runtime));
  hooks.daemon.ready.tap(async () => {
    await runtime.start();
  });
  hooks.daemon.close.tap(async () => {
    await runtime.stop();
  });
  return runtime;
}
