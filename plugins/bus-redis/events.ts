/**
 * The cluster event stream of `bus-redis`: every node appends its events to one Redis stream, under
 * a seq taken from one counter in the same script, so the stream's order is the cluster's one order
 * and the entry id `<seq>-0` is the event's seq. Each node reads the stream with a blocking XREAD and
 * delivers every event (its own too, a round trip after publishing) to its listeners, so a
 * WebSocket on any node sees every node's events in the same order and resumes from a seq.
 */

import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import type { EventBus, EventListener, Logger, SparEvent, SparEventPayload } from "../../sdk/index.js";

/** The most entries read per XREAD, and how long one blocks before it looks again (ms). */
const READ_COUNT = 1000;
const READ_BLOCK_MS = 1000;
/** How long `delivered()` waits for this node's own events before it gives up (Redis gone). */
const DELIVERED_TIMEOUT_MS = 2000;

const PUBLISH_SCRIPT = `
local seq = redis.call('INCR', KEYS[1])
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], seq .. '-0', 'e', ARGV[1])
return seq`;

type PublishingRedis = Redis & {
  sparPublish(seqKey: string, stream: string, json: string, maxlen: number): Promise<number>;
};

export interface RedisEventsOptions {
  redis: Redis;
  prefix: string;
  historySize: number;
  log: Logger;
  onListenerError(err: unknown, event: SparEvent): void;
}

export interface RedisEvents extends EventBus {
  close(): Promise<void>;
}

const seqOf = (id: string) => Number.parseInt(id.slice(0, id.indexOf("-")), 10);

/** Starts reading the stream from its current end; the node sees events published from now on. */
export async function createRedisEvents(options: RedisEventsOptions): Promise<RedisEvents> {
  const { prefix, historySize, log } = options;
  const stream = `${prefix}:events`;
  const seqKey = `${prefix}:events:seq`;
  // Deltas share the stream (one order), so it holds more entries than the lifecycle history.
  const maxlen = Math.max(historySize * 10, 10_000);
  const redis = options.redis as PublishingRedis;
  redis.defineCommand("sparPublish", { numberOfKeys: 2, lua: PUBLISH_SCRIPT });
  const reader = redis.duplicate();
  reader.on("error", () => undefined);

  const listeners = new Set<EventListener>();
  const [last] = await redis.xrevrange(stream, "+", "-", "COUNT", 1);
  let lastId = last?.[0] ?? "0-0";
  let lastSeq = last ? seqOf(lastId) : 0;
  let closed = false;
  /** The seq of this node's latest publish, once Redis has answered it. */
  let latestOwn: Promise<number> = Promise.resolve(0);
  const waiters: { seq: number; resolve(): void }[] = [];

  function deliver(id: string, fields: string[]): void {
    const json = fields[fields.indexOf("e") + 1];
    if (json === undefined) return;
    const event = { ...(JSON.parse(json) as object), seq: seqOf(id) } as SparEvent;
    lastId = id;
    lastSeq = event.seq;
    for (const listener of listeners) {
      try {
        listener(event);
      } catch (err) {
        options.onListenerError(err, event);
      }
    }
    for (let i = waiters.length - 1; i >= 0; i--) {
      const waiter = waiters[i];
      if (waiter && waiter.seq <= lastSeq) {
        waiters.splice(i, 1);
        waiter.resolve();
      }
    }
  }

  const reading = (async () => {
    while (!closed) {
      try {
        const batches = await reader.xread(
          "COUNT",
          READ_COUNT,
          "BLOCK",
          READ_BLOCK_MS,
          "STREAMS",
          stream,
          lastId,
        );
        for (const [, entries] of batches ?? []) for (const [id, fields] of entries) deliver(id, fields);
      } catch (err) {
        if (closed) return;
        log.warn("bus-redis: reading the event stream failed; retrying", { error: String(err) });
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  })();

  return {
    publish(payload: SparEventPayload) {
      const stamped = { ...payload, id: randomUUID(), at: new Date().toISOString() };
      const published = redis.sparPublish(seqKey, stream, JSON.stringify(stamped), maxlen);
      latestOwn = published.catch((err: unknown) => {
        log.error("bus-redis: publishing an event failed", { kind: payload.kind, error: String(err) });
        return 0;
      });
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async since(after) {
      const entries = await redis.xrange(stream, `${after + 1}-0`, "+");
      const events: SparEvent[] = [];
      for (const [id, fields] of entries) {
        const json = fields[fields.indexOf("e") + 1];
        if (json === undefined) continue;
        const event = { ...(JSON.parse(json) as object), seq: seqOf(id) } as SparEvent;
        if (event.kind !== "message.delta") events.push(event);
      }
      return events.slice(-historySize);
    },
    get lastSeq() {
      return lastSeq;
    },
    async delivered() {
      const seq = await latestOwn;
      if (seq <= lastSeq) return;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, DELIVERED_TIMEOUT_MS);
        waiters.push({
          seq,
          resolve: () => {
            clearTimeout(timer);
            resolve();
          },
        });
      });
    },
    async close() {
      closed = true;
      for (const waiter of waiters.splice(0)) waiter.resolve();
      reader.disconnect();
      await reading;
    },
  };
}
