/**
 * `spar/sdk/gorillas`: the gorilla runtime a scheduler plugin installs: GORILLA.toml files read and
 * checked, their schedules, the lifecycle (caged, unleashed), each cycle a budgeted turn of the
 * gorilla's fighter, the states and runs kept in the plugin's own collections (namespace
 * "gorillas"), the routes and hooks. A scheduler plugin brings only the `Firing`: when a gorilla
 * fires and, in a cluster, which node answers. scheduler-croner and scheduler-bullmq are built on
 * these alone.
 *
 * @example
 * import { installGorillas } from "spar/sdk/gorillas";
 * apply(api, { gorillas }) {
 *   installGorillas(api, gorillas, createTimerFiring(api));
 * }
 */
export type { CycleSlot, Firing, FiringHost } from "../../lib/gorillas/firing.js";
export {
  type GorillaManifest,
  type GorillaOptions,
  type GorillaSettings,
  type LoadedGorilla,
  parseGorilla,
} from "../../lib/gorillas/manifest.js";
export { type GorillasSettings, gorillaTimezone, installGorillas } from "../../lib/gorillas/plugin.js";
export type {
  GorillaDesired,
  GorillaRecords,
  GorillaRunEnd,
  GorillaRunOutcome,
  GorillaRunRecord,
  GorillaRunTrigger,
  GorillaState,
} from "../../lib/gorillas/records.js";
export { machineTimezone, parseSchedule, type Schedule } from "../../lib/gorillas/schedule.js";
