import type { DiscoveredPlugin } from "../../kernel/host/plugin-manifest.js";
import { pluginChoiceProblems } from "../../lib/plugin-choices.js";
import { whyInactive } from "../../lib/plugin-state.js";
import { checkNamespaces } from "../../sdk/collection-checks.js";
import type { SparConfig } from "../../sdk/config.js";
import { isSparError } from "../../sdk/errors.js";

/**
 * `[plugins]` against the installed plugins, and the active plugins' data declarations, as start
 * checks them: a daemon that refuses to start over a mistyped name or a malformed collection is
 * explained here, and one already running is warned before its next start.
 */
export function pluginsCheck(
  config: SparConfig,
  installed: readonly DiscoveredPlugin[],
): { name: string; ok: boolean; detail: string } {
  const problems = pluginChoiceProblems(
    config.plugins,
    installed.map((p) => p.manifest),
  ).map((p) => p.message);
  try {
    checkNamespaces(
      installed
        .filter((p) => !whyInactive(p.manifest, config.plugins))
        .map((p) => ({ id: p.manifest.id, source: p.source, data: p.manifest.data })),
    );
  } catch (err) {
    if (!isSparError(err, "PLUGIN_INVALID")) throw err;
    problems.push(`${err.message} (PLUGIN_INVALID)`);
  }
  if (problems.length === 0)
    return { name: "plugins", ok: true, detail: "every [plugins] entry names an installed plugin" };
  const detail = `${problems.join("; ")} (providers are checked once this is fixed)`;
  return { name: "plugins", ok: false, detail };
}
