/**
 * Whether a discovered plugin runs under a config, and if not, why. The kernel's plugin host decides
 * with this (a plugin runs when nothing here stops it), and `spar plugin list` says the same words,
 * so what the list shows is what the daemon does.
 */
import { SINGLE_SLOT_KINDS, type SlotKind } from "../kernel/host/plugin-manifest.js";
import type { SparConfig } from "../sdk/config.js";
import { SparError } from "../sdk/errors.js";
import type { PluginManifest } from "../sdk/plugin-manifest.js";

/** Why a plugin does not run under `[plugins]`, or undefined when it does. */
export function whyInactive(
  manifest: Pick<PluginManifest, "id" | "kind">,
  plugins: SparConfig["plugins"],
): string | undefined {
  if (plugins.disable.includes(manifest.id)) return "disabled: [plugins] disable lists it";
  if (SINGLE_SLOT_KINDS.has(manifest.kind)) {
    // One plugin per slot kind runs: the one [plugins] <kind> names (enable cannot add a second).
    const chosen = plugins[manifest.kind as SlotKind];
    return chosen === manifest.id
      ? undefined
      : `not in the ${manifest.kind} slot: [plugins] ${manifest.kind} = "${chosen}"`;
  }
  if (plugins.enable.length > 0 && !plugins.enable.includes(manifest.id)) {
    return "not enabled: [plugins] enable does not list it";
  }
  return undefined;
}

/**
 * The plugins that run under `[plugins]`; PLUGIN_INVALID, naming both, when one of them requires a
 * plugin that does not (disabled or not installed), so no daemon starts without what one needs.
 */
export function eligiblePlugins<P extends { manifest: PluginManifest }>(
  plugins: readonly P[],
  config: SparConfig["plugins"],
): P[] {
  const eligible = plugins.filter((p) => !whyInactive(p.manifest, config));
  const running = new Set(eligible.map((p) => p.manifest.id));
  const installed = new Set(plugins.map((p) => p.manifest.id));
  for (const { manifest } of eligible) {
    const missing = (manifest.requires ?? []).find((dep) => !running.has(dep));
    if (missing !== undefined) {
      throw new SparError(
        "PLUGIN_INVALID",
        `plugin ${manifest.id} requires ${missing}, which is ${installed.has(missing) ? "disabled" : "not installed"}`,
      );
    }
  }
  return eligible;
}
