import { join } from "node:path";
import type { SparConfig } from "../../sdk/config.js";
import { SparError } from "../../sdk/errors.js";
import { formatSchemaErrors, validatorWithDefaults } from "../../sdk/schema.js";
import { KERNEL_VERSION } from "../../sdk/version.js";
import { isTable, loadConfig } from "./config.js";
import { type DiscoveredPlugin, discoverPlugins, pluginRoots } from "./plugin-manifest.js";

/**
 * Plugins own config.toml tables (DESIGN §3.2): a manifest's `sections` names each table's path
 * (`channels`, `channels.telegram`, or the plugin's own id) with its JSON Schema. Every table is
 * checked against its owner, defaults filled in, before any plugin code is imported, and a table
 * nobody owns is an error naming the key and the file. A nested owner's table is cut out of its
 * parent's before the parent is checked, so `[channels]` and `[channels.telegram]` can have two owners.
 * Plugins that declare one table with the same schema share it, and each is handed it.
 */
export function checkSections(
  config: SparConfig,
  plugins: readonly DiscoveredPlugin[],
  file: string,
): Record<string, Record<string, unknown>> {
  const owners = new Map<string, { id: string; schema: object }>();
  for (const p of plugins) {
    for (const [path, schema] of Object.entries(p.manifest.sections ?? {})) {
      const other = owners.get(path);
      // A table several plugins read ([redis]: the bus and the scheduler) is shared when every
      // claimant declares the same schema; two different schemas for one table are a conflict.
      if (other && canonical(other.schema) === canonical(schema)) continue;
      if (other) {
        throw new SparError(
          "PLUGIN_INVALID",
          `the config table [${path}] is claimed by both ${other.id} and ${p.manifest.id}; disable one`,
        );
      }
      owners.set(path, { id: p.manifest.id, schema });
    }
  }
  const checked: Record<string, Record<string, unknown>> = {};
  const owned = (path: string) =>
    owners.has(path) || [...owners.keys()].some((o) => o.startsWith(`${path}.`));

  function check(path: string, value: Record<string, unknown>): void {
    const children = Object.keys(value).filter((k) => isTable(value[k]) && owned(`${path}.${k}`));
    const own = Object.fromEntries(Object.entries(value).filter(([k]) => !children.includes(k)));
    const owner = owners.get(path);
    if (owner) {
      const validate = validatorWithDefaults(owner.schema);
      if (!validate(own)) {
        throw new SparError("CONFIG_INVALID", `${file}: ${formatSchemaErrors(validate.errors, path)}`, {
          path,
        });
      }
      checked[path] = own;
    } else {
      const stray = Object.keys(own)[0];
      if (stray !== undefined) {
        throw new SparError(
          "CONFIG_INVALID",
          `${file}: unknown key "${path}.${stray}" (no installed plugin owns it)`,
          { path: `${path}.${stray}` },
        );
      }
    }
    for (const child of children) check(`${path}.${child}`, value[child] as Record<string, unknown>);
  }

  for (const [key, value] of Object.entries(config.sections)) {
    if (!owned(key)) {
      throw new SparError("CONFIG_INVALID", `${file}: unknown key "${key}" (no installed plugin owns it)`, {
        path: key,
      });
    }
    check(key, value);
  }
  // Owned tables left out of config.toml still get their defaults.
  for (const [path, { schema }] of owners) {
    if (checked[path] || path.includes(".")) continue;
    const empty: Record<string, unknown> = {};
    if (validatorWithDefaults(schema)(empty)) checked[path] = empty;
  }
  return checked;
}

/**
 * The configuration as the daemon sees it: config.toml, the plugins found (manifests only, no code),
 * and every plugin-owned table checked. `spar start`, `doctor` and `security audit` all read this.
 */
export function loadSparConfig(
  home: string,
  env: NodeJS.ProcessEnv = process.env,
): { config: SparConfig; plugins: DiscoveredPlugin[] } {
  const config = loadConfig(home, env);
  const plugins = discoverPlugins(pluginRoots(home, config.plugins.dirs), KERNEL_VERSION);
  config.sections = checkSections(config, plugins, join(home, "config.toml"));
  return { config, plugins };
}

/** JSON with every object's keys sorted: two schemas written in another key order compare equal. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : 1));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
}
