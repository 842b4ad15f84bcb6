/**
 * A plugin's view of the Ring, as its manifest draws it: the groups of the Ring's services it
 * declares in `uses`, and the event kinds it declares in `contributes.events`. What a plugin can
 * reach is then read from its plugin.json (as its config tables and data are), and a plugin reaching
 * past it fails at that moment, naming itself and what it reached for, instead of quietly depending
 * on more of the daemon than it says.
 */
import { SparError } from "./errors.js";
import type { EventBus } from "./events.js";
import type { Logger } from "./index.js";
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
  "strategies",
  "channels",
  "tunnel",
  "llm",
  "moves",
  "auth",
  "plugins",
  "store",
  "usage",
  "spend",
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

/**
 * The bus as the plugin `plugin` sees it: it may publish only the event kinds in `kinds` (its
 * manifest's `contributes.events`); another is PLUGIN_FAILED naming the plugin and the kind.
 *
 * @example
 * scopeEvents(bus, "moves-dice", ["dice.rolled"]).publish({ kind: "dice.rolled", … });
 */
export function scopeEvents(events: EventBus, plugin: string, kinds: readonly string[] = []): EventBus {
  const declared = new Set(kinds);
  return {
    publish(payload) {
      if (!declared.has(payload.kind)) {
        throw new SparError(
          "PLUGIN_FAILED",
          `plugin ${plugin} published "${payload.kind}", which its plugin.json does not declare in contributes.events`,
          { plugin },
        );
      }
      return events.publish(payload);
    },
    subscribe: (listener) => events.subscribe(listener),
    since: (seq) => events.since(seq),
    get lastSeq() {
      return events.lastSeq;
    },
    delivered: () => events.delivered(),
  };
}

/**
 * A plugin's logger: the daemon's, each entry carrying the plugin's id as `plugin` (a field the
 * entry sets itself wins), so `spar logs --json` and the log file say which plugin wrote a line.
 *
 * @example
 * scopeLog(log, "channel-telegram").warn("poll failed", { error }); // … plugin="channel-telegram"
 */
export function scopeLog(log: Logger, plugin: string): Logger {
  // Last, so the readable line still starts with the entry's own fields.
  const tag = (fields?: Record<string, unknown>) =>
    fields && "plugin" in fields ? fields : { ...fields, plugin };
  return {
    info: (message, fields) => log.info(message, tag(fields)),
    warn: (message, fields) => log.warn(message, tag(fields)),
    error: (message, fields) => log.error(message, tag(fields)),
  };
}
