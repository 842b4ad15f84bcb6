/**
 * For tests only: a bundled plugin's `api.data` over an opened store, from its own manifest's
 * declaration (checked as the plugin host checks it), as the host hands it to the plugin.
 */
import { readFileSync } from "node:fs";
import {
  checkDataDeclaration,
  createPluginData,
  type DataDeclaration,
  type PluginData,
  type Store,
} from "../../sdk/index.js";

/** `plugins/<id>/plugin.json`'s `data`. */
export function dataDeclaration(id: string): DataDeclaration {
  const url = new URL(`../../plugins/${id}/plugin.json`, import.meta.url);
  const { data } = JSON.parse(readFileSync(url, "utf8")) as { data?: DataDeclaration };
  if (!data) throw new Error(`plugin ${id} declares no data`);
  checkDataDeclaration(id, data);
  return data;
}

/** The plugin's `api.data` over `store`'s collections. */
export function pluginData(id: string, store: Store): PluginData {
  return createPluginData({ plugin: id, data: dataDeclaration(id), store: () => store.collections });
}
