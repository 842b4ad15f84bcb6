import { SparError } from "../sdk/errors.js";
import type { Bus, EventBus, EventListener } from "../sdk/events.js";
import type { RingHooks } from "../sdk/hooks.js";
import type { Logger } from "../sdk/index.js";

/**
 * The Ring's side of the bus slot: the `EventBus` the kernel and plugins hold from the start, and
 * the bus the active bus plugin opens behind it (`hooks.bus.open`) before the store. Listeners
 * registered earlier wait here; all of them hang off one subscription to the opened bus, so a
 * listener that throws is logged and never stops the others.
 */
export function createBusSlot(hooks: RingHooks, log: Logger) {
  let bus: Bus | undefined;
  const listeners = new Set<EventListener>();
  const listenerFailed = (err: unknown, event: { kind: string }) =>
    log.error("event listener failed", { kind: event.kind, error: String(err) });

  const events: EventBus = {
    publish(payload) {
      if (!bus) throw new SparError("PLUGIN_FAILED", `"${payload.kind}" was published before the bus opened`);
      bus.events.publish(payload);
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    since: async (seq) => (bus ? bus.events.since(seq) : []),
    get lastSeq() {
      return bus?.events.lastSeq ?? 0;
    },
    delivered: async () => bus?.events.delivered(),
  };

  return {
    events,
    /** The opened bus: PLUGIN_FAILED before `open` resolved. */
    bus(): Bus {
      if (!bus) throw new SparError("PLUGIN_FAILED", "the bus is not open");
      return bus;
    },
    /** Whether other daemons share the bus (false until it is open). */
    get shared(): boolean {
      return bus?.shared ?? false;
    },
    /** Opens the bus through the plugin `pluginId` (activated by the caller). */
    async open(pluginId: string, windowS: number): Promise<void> {
      const opened = await hooks.bus.open.promise({
        historySize: 1000,
        quotaWindowMs: windowS * 1000,
        onListenerError: listenerFailed,
      });
      if (!opened) throw new SparError("PLUGIN_FAILED", `the bus plugin ${pluginId} opened no bus`);
      bus = opened;
      opened.events.subscribe((event) => {
        for (const listener of listeners) {
          try {
            listener(event);
          } catch (err) {
            listenerFailed(err, event);
          }
        }
      });
    },
    async close(): Promise<void> {
      await bus?.close();
    },
  };
}
