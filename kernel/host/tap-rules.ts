import { SparError } from "../../sdk/errors.js";
import type { TapOptions, TapPhase } from "../../sdk/index.js";
import type { PluginManifest } from "../../sdk/plugin-manifest.js";
import type { ModelSettings } from "../../sdk/types.js";

/**
 * Two rules for plugins' taps (DESIGN §3.1): a bail hook that routes a name reaches only the plugin
 * whose manifest contributes that name, and taps run in the order their plugins declare (phase,
 * then `before`/`after`, then plugin id), never in the order plugins happened to be imported.
 */

/** The bail hooks that route a name, and where the name is in their arguments. */
const ROUTED: Record<string, (args: unknown[]) => string> = {
  "provider.resolve": (args) => (args[0] as ModelSettings).provider,
  "move.resolve": (args) => args[0] as string,
  "compaction.resolve": (args) => args[0] as string,
  "strategy.resolve": (args) => args[0] as string,
  "channel.resolve": (args) => args[0] as string,
};

const CONTRIBUTED: Record<string, (m: PluginManifest) => readonly string[]> = {
  "provider.resolve": (m) => (m.contributes?.providers ?? []).map((p) => p.id),
  "move.resolve": (m) => (m.contributes?.moves ?? []).map((p) => p.name),
  "compaction.resolve": (m) => m.contributes?.compaction ?? [],
  "strategy.resolve": (m) => m.contributes?.strategies ?? [],
  "channel.resolve": (m) => m.contributes?.channels ?? [],
};

export interface TapRouting {
  /** Whether `plugin`'s tap of `path` is asked for these arguments. */
  asks(path: string, plugin: string, args: unknown[]): boolean;
  /** Records that `plugin` offers moves at run time (it taps `move.list`): names no manifest contributes are its to resolve. */
  offersMoves(plugin: string): void;
}

/** The owner of every contributed name; PLUGIN_INVALID naming both when two plugins contribute one. */
export function tapRouting(manifests: readonly PluginManifest[]): TapRouting {
  const owners = new Map<string, Map<string, string>>();
  for (const [path, names] of Object.entries(CONTRIBUTED)) {
    const owner = new Map<string, string>();
    for (const m of manifests) {
      for (const name of names(m)) {
        const other = owner.get(name);
        if (other && other !== m.id) {
          throw new SparError(
            "PLUGIN_INVALID",
            `plugins ${other} and ${m.id} both contribute the ${path.split(".")[0]} "${name}": disable one ([plugins] disable)`,
          );
        }
        owner.set(name, m.id);
      }
    }
    owners.set(path, owner);
  }
  const dynamic = new Set<string>();
  return {
    asks(path, plugin, args) {
      const nameOf = ROUTED[path];
      if (!nameOf) return true;
      const owner = owners.get(path)?.get(nameOf(args));
      return owner === undefined ? path === "move.resolve" && dynamic.has(plugin) : owner === plugin;
    },
    offersMoves: (plugin) => dynamic.add(plugin),
  };
}

const PHASES: Record<TapPhase, number> = { first: -2000, early: -1000, normal: 0, late: 1000, last: 2000 };

/** The tapable stage of a phase (the kernel's own taps use these too). */
export const phaseStage = (phase: TapPhase = "normal"): number => PHASES[phase];

interface OrderedTap {
  name: string;
  stage?: number;
  before?: readonly string[];
  after?: readonly string[];
}

const list = (v: string | readonly string[] | undefined): string[] => (v === undefined ? [] : [v].flat());

/** The tap options tapable keeps (it copies them onto the tap), with the plugin's rules. */
export function tapOptions(plugin: string, options: TapOptions = {}): OrderedTap {
  return {
    name: plugin,
    stage: phaseStage(options.phase),
    before: list(options.before),
    after: list(options.after),
  };
}

/**
 * Puts a hook's taps in declared order: by stage; within one, a tap named in another's `before` (or
 * naming it in `after`) comes after it; otherwise by plugin id. Called after every tap.
 */
export function reorder(hook: { taps: OrderedTap[]; _resetCompilation(): void }): void {
  const byStage = [...hook.taps].sort((a, b) => (a.stage ?? 0) - (b.stage ?? 0));
  const out: OrderedTap[] = [];
  for (let i = 0; i < byStage.length; ) {
    const stage = byStage[i]?.stage ?? 0;
    const group: OrderedTap[] = [];
    while (i < byStage.length && (byStage[i]?.stage ?? 0) === stage) group.push(byStage[i++] as OrderedTap);
    out.push(...declaredOrder(group));
  }
  hook.taps.splice(0, hook.taps.length, ...out);
  hook._resetCompilation();
}

/** Topological order of one stage's taps, ties by name (then registration order). */
function declaredOrder(taps: OrderedTap[]): OrderedTap[] {
  const names = new Set(taps.map((t) => t.name));
  const mustFollow = (t: OrderedTap, u: OrderedTap) =>
    t !== u && ((u.before ?? []).includes(t.name) || (t.after ?? []).includes(u.name));
  const left = taps
    .map((t, i) => ({ t, i }))
    .sort((a, b) => (a.t.name < b.t.name ? -1 : a.t.name > b.t.name ? 1 : a.i - b.i));
  const out: OrderedTap[] = [];
  while (left.length > 0) {
    // The first tap (by name) that waits on nobody still left.
    const k = left.findIndex(({ t }) => !left.some(({ t: u }) => names.has(u.name) && mustFollow(t, u)));
    if (k < 0) {
      const cycle = [...new Set(left.map(({ t }) => t.name))].join(", ");
      throw new SparError(
        "PLUGIN_INVALID",
        `the taps of ${cycle} order each other in a cycle (before/after)`,
      );
    }
    const [next] = left.splice(k, 1);
    if (next) out.push(next.t);
  }
  return out;
}
