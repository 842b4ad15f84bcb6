import { loadConfig } from "../../kernel/host/config.js";
import { discoverPlugins, pluginRoots } from "../../kernel/host/plugin-manifest.js";
import { resolveHome, withDotEnv } from "../../lib/home.js";
import { KERNEL_VERSION } from "../../sdk/version.js";
import { type GlobalOptions, printJson, table } from "../output.js";

/** Discovers plugins from their manifests alone: no plugin module is imported, no daemon is needed. */
function discover() {
  const home = resolveHome();
  const config = loadConfig(home, withDotEnv(home));
  return discoverPlugins(pluginRoots(home, config.plugins.dirs), KERNEL_VERSION);
}

/** `spar plugin list` (the only action; the parser refuses others). */
export async function plugin(options: GlobalOptions): Promise<void> {
  const plugins = discover().map(({ manifest, dir, source }) => ({
    id: manifest.id,
    kind: manifest.kind,
    version: manifest.version,
    source,
    description: manifest.description,
    dir,
  }));
  if (options.json) return printJson({ plugins });
  const rows = plugins.map((p) => [p.id, p.kind, p.version, p.source, p.description]);
  process.stdout.write(`${table([["ID", "KIND", "VERSION", "SOURCE", "DESCRIPTION"], ...rows])}\n`);
}
