/**
 * A plugin's view of the Ring's services: only the groups its manifest declares in `uses`. What a
 * plugin can reach is then read from its plugin.json (as its config tables, events and data are),
 * and a plugin reaching for a group it did not declare fails at that moment, naming itself and the
 * group, instead of quietly depending on more of the daemon than it says.
 */
import { SparError } from "./errors.js";
import type { RingServices } from "./services.js";

/** RingServices' plain values, which every plugin gets without declaring them. */
type RingScalar = "version" | "startedAt" | "clustered";

/**
 * The groups of RingServices a manifest may declare in `uses` (plugin.schema.json's `uses` items;
 * a test checks they agree, and that they are every group the Ring has).
 *
 * @example
 * { "id": "moves-dice", "uses": ["fighters"], … }
 */
export const RING_GROUPS = [
  "fighters",
  "bouts",
  "creeds",
  "schedules",
  "gorillas",
  "strategies",
  "channels",
  "tunnel",
  "llm",
  "moves",
  "auth",
  "plugins",
  "store",
] as const satisfies readonly Exclude<keyof RingServices, RingScalar>[];

/** One group of the Ring's services a plugin may use (`api.ring.<group>`). */
export type RingGroup = (typeof RING_GROUPS)[number];

const GROUPS: ReadonlySet<string> = new Set(RING_GROUPS);

/**
 * `services` as the plugin `plugin` sees them: the groups in `uses`, and the scalars; any other group
 * throws PLUGIN_INVALID when the plugin reaches for it (when it runs, not when it is applied).
 *
 * @example
 * const ring = scopeRing(services, "moves-dice", ["fighters"]);
 * ring.fighters.list(); // fine
 * ring.llm; // PLUGIN_INVALID: plugin moves-dice uses ring.llm, which its plugin.json does not declare in "uses"
 */
export function scopeRing(
  services: RingServices,
  plugin: string,
  uses: readonly string[] = [],
): RingServices {
  const declared = new Set(uses);
  return new Proxy(services, {
    get(target, key) {
      if (typeof key === "string" && GROUPS.has(key) && !declared.has(key)) {
        throw new SparError(
          "PLUGIN_INVALID",
          `plugin ${plugin} uses ring.${key}, which its plugin.json does not declare in "uses"`,
          { plugin, group: key },
        );
      }
      // The target as receiver: the Ring's getters (the store's groups, looked up on each use) read their closures.
      return Reflect.get(target, key);
    },
  });
}
