import { existsSync, readdirSync, readFileSync } from "node:fs";
import { basename, join, resolve } from "node:path";
// Subpath imports: the package index loads every semver function (~30 ms of start-up).
import satisfies from "semver/functions/satisfies.js";
import validRange from "semver/ranges/valid.js";
import { SparError } from "../../sdk/errors.js";
import type { PluginKind, PluginManifest } from "../../sdk/plugin-manifest.js";
import { formatSchemaErrors, validatorFor } from "../../sdk/schema.js";
import { PACKAGE_ROOT } from "../../sdk/version.js";

export interface DiscoveredPlugin {
  manifest: PluginManifest;
  /** Folder holding plugin.json; `entry` is resolved against it. */
  dir: string;
  source: "bundled" | "user";
}

/** Kinds of which exactly one plugin is active, chosen by `[plugins] <kind>` in config. */
const SLOT_KINDS = ["store", "arena", "tunnel", "scheduler", "troops", "bus"] as const;
export type SlotKind = (typeof SLOT_KINDS)[number];
export const SINGLE_SLOT_KINDS: ReadonlySet<PluginKind> = new Set(SLOT_KINDS);

/** Bundled plugins are the compiled ones: dist/plugins/<id>/ holds both plugin.json and the code. */
export const BUNDLED_PLUGINS_DIR = join(PACKAGE_ROOT, "dist", "plugins");

let manifestSchema: object | undefined;
function loadManifestSchema(): object {
  manifestSchema ??= JSON.parse(readFileSync(join(PACKAGE_ROOT, "plugin.schema.json"), "utf8")) as object;
  return manifestSchema;
}

/**
 * Reads and validates one plugin.json. Nothing of the plugin's code is touched: this is what makes
 * listing cheap and a broken plugin harmless until it is asked for.
 */
export function readManifest(dir: string, kernelVersion: string): PluginManifest {
  const file = join(dir, "plugin.json");
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(file, "utf8"));
  } catch (err) {
    throw new SparError("PLUGIN_INVALID", `${file}: ${(err as Error).message}`);
  }
  const validate = validatorFor(loadManifestSchema());
  if (!validate(data)) {
    throw new SparError("PLUGIN_INVALID", `${file}: ${formatSchemaErrors(validate.errors, "")}`);
  }
  const manifest = data as PluginManifest;
  if (manifest.id !== basename(dir)) {
    throw new SparError(
      "PLUGIN_INVALID",
      `${file}: id "${manifest.id}" must equal the folder name "${basename(dir)}"`,
    );
  }
  if (!manifest.id.startsWith(`${manifest.kind}-`)) {
    throw new SparError(
      "PLUGIN_INVALID",
      `${file}: id "${manifest.id}" must start with its kind "${manifest.kind}-"`,
    );
  }
  if (!validRange(manifest.kernel)) {
    throw new SparError("PLUGIN_INVALID", `${file}: kernel "${manifest.kernel}" is not a semver range`);
  }
  if (!satisfies(kernelVersion, manifest.kernel, { includePrerelease: true })) {
    throw new SparError(
      "PLUGIN_INVALID",
      `${file}: plugin ${manifest.id} supports kernel ${manifest.kernel}, this is ${kernelVersion}`,
    );
  }
  return manifest;
}

/**
 * Finds every plugin folder under the given roots (bundled first, then user dirs), validates each
 * manifest and refuses duplicate ids. A later root never silently shadows an earlier one.
 */
export function discoverPlugins(
  roots: { dir: string; source: DiscoveredPlugin["source"] }[],
  kernelVersion: string,
): DiscoveredPlugin[] {
  const found = new Map<string, DiscoveredPlugin>();
  for (const root of roots) {
    if (!existsSync(root.dir)) continue;
    const entries = readdirSync(root.dir, { withFileTypes: true })
      .filter((e) => e.isDirectory() && existsSync(join(root.dir, e.name, "plugin.json")))
      .map((e) => e.name)
      .sort();
    for (const name of entries) {
      const dir = resolve(root.dir, name);
      const manifest = readManifest(dir, kernelVersion);
      const previous = found.get(manifest.id);
      if (previous) {
        throw new SparError(
          "PLUGIN_INVALID",
          `plugin ${manifest.id} is found twice: ${previous.dir} and ${dir}; remove one`,
        );
      }
      found.set(manifest.id, { manifest, dir, source: root.source });
    }
  }
  return [...found.values()];
}

/** The roots to search, in order: bundled plugins, `<home>/plugins`, then `[plugins] dirs`. */
export function pluginRoots(
  home: string,
  extraDirs: string[],
): { dir: string; source: DiscoveredPlugin["source"] }[] {
  return [
    { dir: BUNDLED_PLUGINS_DIR, source: "bundled" },
    { dir: join(home, "plugins"), source: "user" },
    ...extraDirs.map((dir) => ({ dir: resolve(home, dir), source: "user" as const })),
  ];
}
