import { SparError } from "../../sdk/errors.js";
import type { TapOptions, TapPhase } from "../../sdk/index.js";
import type { PluginManifest } from "../../sdk/plugin-manifest.js";
import type { ModelSettings } from "../../sdk/types.js";

/**
 * Two rules for plugins' taps (DESIGN §3.1): a bail hook that routes a name reaches only the plugin
 * whose manifest contributes that name (names no manifest contributes: for `move.resolve`, the
 * plugins offering moves at run time, which tap `move.list`), and taps run in declared order
 * (phase, then `before`/`after`, then plugin id), never in the order plugins happened to be imported.
 */
const ROUTED: Record<string, [(args: unknown[]) => string, (m: PluginManifest) => readonly string[]]> = {
  "provider.resolve": [
    (a) => (a[0] as ModelSettings).provider,
    (m) => (m.contributes?.providers ?? []).map((p) => p.id),
  ],
  "move.resolve": [(a) => a[0] as string, (m) => (m.contributes?.moves ?? []).map((p) => p.name)],
  "compaction.resolve": [(a) => a[0] as string, (m) => m.contributes?.compaction ?? []],
  "strategy.resolve": [(a) => a[0] as string, (m) => m.contributes?.strategies ?? []],
  "channel.resolve": [(a) => a[0] as string, (m) => m.contributes?.channels ?? []],
};

export interface TapRouting {
  /** Whether `plugin`'s tap of `path` is asked for these arguments. */
  asks(path: string, plugin: string, args: unknown[]): boolean;
  /** `plugin` taps `move.list`: names no manifest contributes are its to resolve. */
  offersMoves(plugin: string): void;
}

/** The owner of every contributed name; PLUGIN_INVALID naming both when two plugins contribute one. */
export function tapRouting(manifests: readonly PluginManifest[]): TapRouting {
  const owners = new Map<string, Map<string, string>>();
  for (const [path, [, names]] of Object.entries(ROUTED)) {
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
      const route = ROUTED[path];
      if (!route) return true;
      const owner = owners.get(path)?.get(route[0](args));
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

/** The tap options tapable keeps (it copies them onto the tap), with the plugin's rules. */
export function tapOptions(plugin: string, o: TapOptions = {}): OrderedTap {
  const list = (v?: string | readonly string[]) => (v === undefined ? [] : [v].flat());
  return { name: plugin, stage: phaseStage(o.phase), before: list(o.before), after: list(o.after) };
}

/**
 * Puts a hook's taps in declared order, after every tap: by stage; within one, a tap another names
 * in `before` (or that names it in `after`) comes after it; otherwise by plugin id, then as tapped.
 */
export function reorder(hook: { taps: OrderedTap[]; _resetCompilation(): void }): void {
  const left = hook.taps
    .map((t, i) => ({ t, i }))
    .sort(
      (a, b) =>
        (a.t.stage ?? 0) - (b.t.stage ?? 0) ||
        (a.t.name < b.t.name ? -1 : a.t.name > b.t.name ? 1 : a.i - b.i),
    );
  const waits = (t: OrderedTap, u: OrderedTap) =>
    t !== u && t.stage === u.stage && ((u.before ?? []).includes(t.name) || (t.after ?? []).includes(u.name));
  const out: OrderedTap[] = [];
  while (left.length > 0) {
    const k = left.findIndex(({ t }) => !left.some(({ t: u }) => waits(t, u)));
    if (k < 0) {
      const stuck = left.filter(({ t }) => left.some(({ t: u }) => waits(t, u)));
      const cycle = [...new Set(stuck.map(({ t }) => t.name))].join(", ");
      throw new SparError(
        "PLUGIN_INVALID",
        `the taps of ${cycle} order each other in a cycle (before/after)`,
      );
    }
    out.push((left.splice(k, 1)[0] as { t: OrderedTap }).t);
  }
  hook.taps.splice(0, hook.taps.length, ...out);
  hook._resetCompilation();
}
