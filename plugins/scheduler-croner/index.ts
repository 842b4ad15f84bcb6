/**
 * The in-process gorilla scheduler (kind `scheduler`, the single slot `[plugins] scheduler` names):
 * the gorilla runtime of lib/gorillas (lifecycle, cycles, budgets, routes) fired by timers in this
 * process (timers.ts).
 */

import { definePlugin } from "../../sdk/index.js";
import { type GorillasSettings, installGorillas } from "../../sdk/kits/gorillas.js";
import { createTimerFiring } from "./timers.js";

export default definePlugin<{ gorillas: GorillasSettings }>({
  id: "scheduler-croner",
  apply(api, { gorillas }) {
    installGorillas(api, gorillas, createTimerFiring(api));
  },
});
