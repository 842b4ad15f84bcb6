import { randomUUID } from "node:crypto";
import type { FighterStatus, Usage } from "./types.js";

/**
 * Every event kind and its payload. The kernel's are here; a plugin adds its own by declaration
 * merging and lists them in its manifest's `contributes.events` (it may publish no others):
 *
 * @example
 * declare module "spar/sdk" {
 *   interface SparEventMap { "dice.rolled": { fighter_id: string; total: number } }
 * }
 *
 * The spec's FighterSpawned, BoutStarted and the completion event are `fighter.spawned`,
 * `bout.started` and `message.completed`.
 */
export interface SparEventMap {
  "fighter.spawned": { fighter_id: string; name: string };
  "fighter.killed": { fighter_id: string; name: string };
  "fighter.status": { fighter_id: string; status: FighterStatus };
  "fighter.rate_limited": { fighter_id: string; reason: "requests" | "tokens"; retry_after_s: number };
  "bout.started": { fighter_id: string; bout_id: string };
  "message.received": { fighter_id: string; bout_id: string; turn_id: string; from?: string };
  "message.delta": { fighter_id: string; bout_id: string; text: string; request_id?: string };
  "move.called": { fighter_id: string; bout_id: string; name: string; call_id: string };
  "move.result": { fighter_id: string; bout_id: string; name: string; call_id: string; ok: boolean };
  "compaction.applied": {
    fighter_id: string;
    bout_id: string;
    strategy: string;
    compacted: number;
    through_seq: number;
  };
  /** A turn that ended without completing: its steps stay in the bout, with this error. */
  "message.failed": {
    fighter_id: string;
    bout_id: string;
    turn_id: string;
    status: "failed" | "cancelled";
    error: { code: string; message: string };
  };
  /** A channel delivered a message from an allowed sender to its fighter. */
  "channel.inbound": { platform: string; chat: string; sender: string; fighter_id: string };
  /** A channel posted a reply (or a `channel_notify` message) to the platform, in `parts` messages. */
  "channel.outbound": { platform: string; chat: string; parts: number; fighter_id?: string };
  /** Bookkeeping after a committed turn failed (a `turn.end` tap): the reply still stands. */
  "turn.hook_failed": { fighter_id: string; bout_id: string; turn_id: string; hook: string; error: string };
  "message.completed": {
    fighter_id: string;
    bout_id: string;
    turn_id: string;
    usage: Usage;
    iterations: number;
    model: string;
    stop_reason: string;
  };
}

export type SparEventKind = keyof SparEventMap;

/** One event before it is stamped: its kind and that kind's payload. */
export type SparEventPayload = { [K in SparEventKind]: { kind: K } & SparEventMap[K] }[SparEventKind];

/** The envelope every event travels in: `seq` increases by one per event so a client can resume. */
export type SparEvent = SparEventPayload & { id: string; seq: number; at: string };

export type EventListener = (event: SparEvent) => void;

export interface EventBus {
  /** Stamps the payload with id, seq and time, keeps it in the history ring and tells every listener. */
  publish(payload: SparEventPayload): SparEvent;
  /** Listens to every event from now on; returns the function that stops listening. */
  subscribe(listener: EventListener): () => void;
  /** Events with `seq` greater than `since` still in the history ring (deltas are not kept), oldest first. */
  since(seq: number): SparEvent[];
  readonly lastSeq: number;
}

/**
 * Creates the in-process bus. Listeners run synchronously in publish order; one that throws is
 * reported through `onListenerError` and never stops the others or the publisher.
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
      return event;
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    since(after) {
      return history.filter((e) => e.seq > after);
    },
    get lastSeq() {
      return seq;
    },
  };
}
