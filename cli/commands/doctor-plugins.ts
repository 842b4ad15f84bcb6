import type { DiscoveredPlugin } from "../../kernel/host/plugin-manifest.js";
import { pluginChoiceProblems } from "../../lib/plugin-choices.js";
import type { SparConfig } from "../../sdk/config.js";

/**
 * `[plugins]` against the installed plugins, as start checks it: a daemon that refuses to start
 * over a mistyped name is explained here, and one already running is warned before its next start.
 */
export function pluginsCheck(
  config: SparConfig,
  installed: readonly DiscoveredPlugin[],
): { name: string; ok: boolean; detail: string } {
  const problems = pluginChoiceProblems(
    config.plugins,
    installed.map((p) => p.manifest),
  );
  if (problems.length === 0)
    return { name: "plugins", ok: true, detail: "every [plugins] entry names an installed plugin" };
  const detail = `${problems.map((p) => p.message).join("; ")} (providers are checked once this is fixed)`;
  return { name: "plugins", ok: false, detail };
}
