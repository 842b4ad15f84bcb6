import { loadConfig } from "../../kernel/host/config.js";
import { discoverPlugins, pluginRoots } from "../../kernel/host/plugin-manifest.js";
import { resolveHome, withDotEnv } from "../../lib/home.js";
import { whyInactive } from "../../lib/plugin-state.js";
import { KERNEL_VERSION } from "../../sdk/version.js";
import { type GlobalOptions, printJson, table } from "../output.js";

/**
 * `spar plugin list` (the only action; the parser refuses others): every plugin found, from its
 * manifest alone (no plugin module is imported, no daemon is needed), and whether the daemon runs it
 * under config.toml's `[plugins]`: active, or inactive with the reason. "Active" means the daemon
 * loads it when one of its activation events first happens (most load lazily), so it is what the
 * config decides, read now: a daemon started before config.toml was edited keeps what it read then.
 */
export async function plugin(options: GlobalOptions): Promise<void> {
  const home = resolveHome();
  const config = loadConfig(home, withDotEnv(home));
  const found = discoverPlugins(pluginRoots(home, config.plugins.dirs), KERNEL_VERSION);
  const reasons = new Map(found.map((p) => [p.manifest.id, whyInactive(p.manifest, config.plugins)]));
  const plugins = found.map(({ manifest, dir, source }) => {
    // The daemon refuses to start when an active plugin requires an inactive (or missing) one.
    const missing = (manifest.requires ?? []).find((id) => !reasons.has(id) || reasons.get(id) !== undefined);
    const reason =
      reasons.get(manifest.id) ??
      (missing
        ? `requires ${missing}, which is ${reasons.has(missing) ? "inactive" : "not installed"}: the daemon will not start`
        : undefined);
    return {
      id: manifest.id,
      kind: manifest.kind,
      version: manifest.version,
      source,
      active: reason === undefined,
      reason: reason ?? null,
      description: manifest.description,
      dir,
    };
  });
  if (options.json) return printJson({ plugins });
  const state = (p: (typeof plugins)[number]) => (p.active ? "active" : `inactive (${p.reason})`);
  const rows = plugins.map((p) => [p.id, p.kind, state(p), p.version, p.source, p.description]);
  process.stdout.write(`${table([["ID", "KIND", "STATE", "VERSION", "SOURCE", "DESCRIPTION"], ...rows])}\n`);
  const inactive = plugins.filter((p) => !p.active).length;
  process.stdout.write(
    `\n${plugins.length - inactive} active, ${inactive} inactive; [plugins] in config.toml chooses (enable, disable, and one plugin per slot: store, arena, tunnel, scheduler, troops, bus)\n`,
  );
}
