/**
 * `[plugins]` in config.toml names plugins: one per single-slot kind (`store`, `arena`, `tunnel`,
 * `scheduler`, `bus`, `troops`) and any number in `enable` / `disable`. A name that matches no
 * installed plugin used to be taken quietly (a mistyped scheduler left every gorilla answering 404;
 * a mistyped `disable` left the plugin on), so each is checked against the discovered manifests
 * before anything starts, and `spar doctor` runs the same check. Kept out of the kernel's files,
 * which have a size budget.
 */
import type { SparConfig } from "../sdk/config.js";
import { SparError } from "../sdk/errors.js";

/** The kinds of which exactly one plugin is active (kernel/host/plugin-manifest.ts's slots). */
const SLOTS = ["store", "arena", "tunnel", "scheduler", "bus", "troops"] as const;

/** What the check needs of a discovered plugin. */
export interface InstalledPlugin {
  id: string;
  kind: string;
}

/** One wrong entry: the config path of its key, and what is wrong, in words. */
export interface PluginChoiceProblem {
  path: string;
  message: string;
}

/**
 * Every entry of `[plugins]` that names no installed plugin (or, for a slot, one of another kind),
 * each with the closest installed name as a suggestion.
 *
 * @example
 * pluginChoiceProblems({ ...config.plugins, scheduler: "scheduler-cronr" }, installed);
 * // [{ path: "plugins.scheduler", message: '[plugins] scheduler = "scheduler-cronr" names no installed scheduler plugin; did you mean "scheduler-croner"? …' }]
 */
export function pluginChoiceProblems(
  choices: SparConfig["plugins"],
  installed: readonly InstalledPlugin[],
): PluginChoiceProblem[] {
  const problems: PluginChoiceProblem[] = [];
  const byId = new Map(installed.map((p) => [p.id, p]));
  for (const slot of SLOTS) {
    const chosen = choices[slot];
    const found = byId.get(chosen);
    if (found?.kind === slot) continue;
    const ofKind = installed.filter((p) => p.kind === slot).map((p) => p.id);
    const what = found
      ? `is a ${found.kind} plugin, not a ${slot} plugin`
      : `names no installed ${slot} plugin`;
    problems.push({
      path: `plugins.${slot}`,
      message: `[plugins] ${slot} = ${JSON.stringify(chosen)} ${what}${hint(chosen, ofKind)}`,
    });
  }
  const ids = installed.map((p) => p.id);
  for (const list of ["enable", "disable"] as const) {
    choices[list].forEach((entry, index) => {
      if (byId.has(entry)) return;
      problems.push({
        path: `plugins.${list}.${index}`,
        message: `[plugins] ${list} lists ${JSON.stringify(entry)}, which names no installed plugin${hint(entry, ids, false)}`,
      });
    });
  }
  return problems;
}

/** Refuses a `[plugins]` table with a wrong entry: CONFIG_INVALID naming every one, the first's path. */
export function checkPluginChoices(
  choices: SparConfig["plugins"],
  installed: readonly InstalledPlugin[],
): void {
  const problems = pluginChoiceProblems(choices, installed);
  const first = problems[0];
  if (!first) return;
  throw new SparError("CONFIG_INVALID", problems.map((p) => p.message).join("; "), { path: first.path });
}

/** "; did you mean …? (installed: …)" for a mistyped name. */
function hint(name: string, candidates: readonly string[], listAll = true): string {
  const closest = closestName(name, candidates);
  const suggestion = closest === undefined ? "" : `; did you mean ${JSON.stringify(closest)}?`;
  const all = listAll ? ` (installed: ${candidates.length > 0 ? candidates.join(", ") : "none"})` : "";
  return `${suggestion}${all}`;
}

/** The candidate fewest edits away from `name`, if it is close enough to be a typo (a third of it). */
export function closestName(name: string, candidates: readonly string[]): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const candidate of candidates) {
    const distance = editDistance(name.toLowerCase(), candidate.toLowerCase());
    if (!best || distance < best.distance) best = { name: candidate, distance };
  }
  return best && best.distance <= Math.max(2, Math.floor(name.length / 3)) ? best.name : undefined;
}

/** Levenshtein distance, one row at a time (names are short; no library needed for this). */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row[j] = Math.min(
        (previous[j] as number) + 1,
        (row[j - 1] as number) + 1,
        (previous[j - 1] as number) + cost,
      );
    }
    previous = row;
  }
  return previous[b.length] as number;
}
