/**
 * The in-process troop runtime (kind `troops`, the single slot `[plugins] troops` names): troops of
 * fighters, their tasks run by strategy plugins (each imported on `onStrategy:<name>`, the first time
 * a task needs it), every task recorded with its steps; the /api/v1/troops routes.
 */

import { definePlugin, type Usage } from "../../sdk/index.js";
import { createTroopBudgets } from "./budgets.js";
import { addTroopRoutes } from "./routes.js";
import { createTroopRuntime, type TroopsSettings } from "./runtime.js";
import { createTroopData } from "./troop-data.js";

declare module "../../sdk/index.js" {
  interface SparEventMap {
    "troop.created": { troop_id: string; name: string; strategy: string; leader: string; members: string[] };
    /** Edited (PATCH): the troop as it now is. */
    "troop.updated": { troop_id: string; name: string; strategy: string; leader: string; members: string[] };
    /** Disbanded: its running tasks were cancelled first, then it was deleted with its tasks. */
    "troop.disbanded": { troop_id: string; name: string; cancelled_tasks: number };
    "troop.task.started": { troop_id: string; task_id: string; strategy: string };
    /** One member's step ended; `ok` false with the error's code when it failed. */
    "troop.step.completed": {
      troop_id: string;
      task_id: string;
      fighter_id: string;
      role: string;
      ok: boolean;
      usage: Usage;
      error_code?: string;
    };
    "troop.task.completed": {
      troop_id: string;
      task_id: string;
      status: "completed" | "failed" | "cancelled";
      partial: boolean;
      usage: Usage;
      error_code?: string;
    };
  }
}

export default definePlugin<{ troops: TroopsSettings }>({
  id: "troops-local",
  apply({ hooks, ring, events, log, data }, { troops: settings }) {
    const troops = createTroopData(data);
    const runtime = createTroopRuntime({ ring, troops, events, log, settings });
    hooks.arena.routes.tap((routes) => addTroopRoutes(routes, runtime));
    // A troop's budget counts its tasks' steps' model calls (origin `troop-task:<id>`).
    const budgets = createTroopBudgets(troops);
    hooks.spend.budgets.tap(async (rules, { origin }) => {
      const rule = await budgets.of(origin);
      return rule ? [...rules, rule] : rules;
    });
    // Before the Arena listens: no task can be sent before the last daemon's unfinished ones are closed.
    hooks.daemon.ready.tap(
      async () => {
        await runtime.start();
      },
      { phase: "early" },
    );
    hooks.daemon.close.tap(async () => {
      await runtime.stop();
    });
  },
});
