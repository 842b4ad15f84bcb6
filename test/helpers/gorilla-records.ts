/**
 * For tests only: the gorilla records a scheduler plugin gets over an opened store (its `api.data`
 * as the host builds it from its manifest, and the Ring's bout check), without a daemon.
 */
import { readFileSync } from "node:fs";
import { createGorillaRecords, type GorillaRecords } from "../../lib/gorillas/records.js";
import {
  createPluginData,
  type DataDeclaration,
  type PluginManifest,
  SparError,
  type Store,
} from "../../sdk/index.js";

/** A scheduler plugin's manifest, as shipped. */
export function schedulerManifest(id: "scheduler-croner" | "scheduler-bullmq"): PluginManifest {
  const file = new URL(`../../plugins/${id}/plugin.json`, import.meta.url);
  return JSON.parse(readFileSync(file, "utf8")) as PluginManifest;
}

/** The records over `store`, as the plugin `plugin` reaches them. */
export function gorillaRecordsOver(
  store: Store,
  plugin: "scheduler-croner" | "scheduler-bullmq" = "scheduler-croner",
): GorillaRecords {
  const data = createPluginData({
    plugin,
    data: schedulerManifest(plugin).data as DataDeclaration,
    store: () => store.collections,
  });
  return createGorillaRecords(data, {
    async requireBout(boutId) {
      if (!(await store.bouts.get(boutId)))
        throw new SparError("BOUT_NOT_FOUND", `no bout with id "${boutId}"`);
    },
  });
}
