/**
 * The in-process event bus of `bus-local`: listeners run synchronously in publish order, and a
 * bounded history of lifecycle events lets a client resume from a seq.
 */
import { randomUUID } from "node:crypto";
import type { EventBus, EventListener, SparEvent } from "../../sdk/index.js";

/**
 * Creates the bus. A listener that throws is reported through `onListenerError` and never stops the
 * others or the publisher.
 *
 * @example
 * const bus = createEventBus({ historySize: 1000 });
 * bus.subscribe((e) => console.log(e.seq, e.kind));
 * bus.publish({ kind: "fighter.spawned", fighter_id: id, name: "spar" });
 */
export function createEventBus(options: {
  historySize: number;
  onListenerError?: (err: unknown, event: SparEvent) => void;
}): EventBus {
  const history: SparEvent[] = [];
  const listeners = new Set<EventListener>();
  let seq = 0;

  return {
    publish(payload) {
      seq += 1;
      const event = { ...payload, id: randomUUID(), seq, at: new Date().toISOString() } as SparEvent;
      // Deltas are transient text: a resuming client needs the lifecycle, and keeping megabytes of
      // streamed text in the ring would make its memory bound meaningless.
      if (event.kind !== "message.delta") {
        history.push(event);
        if (history.length > options.historySize) history.shift();
      }
      for (const listener of listeners) {
        try {
          listener(event);
        } catch (err) {
          options.onListenerError?.(err, event);
        }
      }
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async since(after) {
      return history.filter((e) => e.seq > after);
    },
    get lastSeq() {
      return seq;
    },
    delivered: async () => undefined,
  };
}
