/**
 * Following the daemon's event stream over its WebSocket (`/api/v1/ws`, plugins/arena-http/ws.ts): a
 * signed ticket request, the upgrade, a `subscribe` frame; after a dropped connection (a restart, a
 * slow-consumer cut-off) the same again with `since` = the last event seen, so nothing is missed
 * that the daemon still keeps (a gap it no longer has is reported as a notice).
 */
import { WebSocket } from "ws";
import { isSparError } from "../../sdk/errors.js";
import type { SparEvent } from "../../sdk/events.js";

export interface FollowOptions {
  /** Event kinds to receive (`message.completed`, `fighter.*` is not a pattern: name each); all by default. */
  kinds?: string[];
  /** Only this fighter's events. */
  fighter_id?: string;
  /** Replay the events after this seq first (what the daemon still keeps), then follow. */
  since?: number;
  /**
   * Told of the daemon's notices: `HISTORY_GAP` (events no longer kept), a slow-consumer cut-off, and
   * `RESTARTED` (the daemon restarted: what it kept since is replayed).
   */
  onNotice?: (notice: { code: string; message: string }) => void;
}

/** The event stream: iterate it; `close()` ends the iteration. */
export interface EventFollower extends AsyncIterable<SparEvent> {
  /** Resolves once the first subscription is in place (events from then on are delivered). */
  readonly ready: Promise<void>;
  close(): void;
}

/** Events held for a consumer that is behind: past it, the socket stops reading until it catches up. */
const HIGH_WATER = 1000;
const RETRY_FIRST_MS = 200;
const RETRY_MAX_MS = 5000;

export function followEvents(
  base: string,
  ticket: () => Promise<string>,
  options: FollowOptions,
): EventFollower {
  const queue: SparEvent[] = [];
  let wake: (() => void) | undefined;
  let failure: unknown;
  let closed = false;
  let socket: WebSocket | undefined;
  let lastSeq = options.since;
  let markReady: () => void = () => undefined;
  let failReady: (err: unknown) => void = () => undefined;
  const ready = new Promise<void>((done, fail) => {
    markReady = done;
    failReady = fail;
  });
  ready.catch(() => undefined);
  const notify = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const end = (err?: unknown) => {
    if (closed) return;
    closed = true;
    failure = err;
    failReady(err ?? new Error("closed before subscribing"));
    socket?.close();
    notify();
  };

  const connect = async (): Promise<void> => {
    const url = `${base.replace(/^http/, "ws")}/api/v1/ws?ticket=${encodeURIComponent(await ticket())}`;
    const ws = new WebSocket(url);
    socket = ws;
    // What this connection asked to resume from, and the events it delivered (a replay after a
    // restart skips them).
    const from = lastSeq;
    const delivered = new Set<number>();
    let restarted = false;
    const subscribe = (since: number | undefined) =>
      ws.send(
        JSON.stringify({
          type: "subscribe",
          ...(options.kinds ? { kinds: options.kinds } : {}),
          ...(options.fighter_id ? { fighter_id: options.fighter_id } : {}),
          ...(since !== undefined ? { since } : {}),
        }),
      );
    await new Promise<void>((done) => {
      ws.on("open", () => subscribe(from));
      ws.on("message", (data) => {
        const frame = JSON.parse(data.toString()) as { type: string; [field: string]: unknown };
        if (frame.type === "event") {
          const { type: _frame, ...fields } = frame;
          const event = fields as unknown as SparEvent;
          if (delivered.has(event.seq)) return;
          if (!restarted && lastSeq !== undefined && event.seq <= lastSeq) return;
          delivered.add(event.seq);
          lastSeq = Math.max(lastSeq ?? 0, event.seq);
          queue.push(event);
          if (queue.length >= HIGH_WATER) ws.pause();
          notify();
        } else if (frame.type === "subscribed") {
          const last = frame.last_seq as number;
          if (from !== undefined && last < from && !restarted) {
            // Numbering started again: the daemon restarted and its history (bus-local keeps it in
            // memory) holds only what happened since. Take all of that, once.
            restarted = true;
            lastSeq = 0;
            options.onNotice?.({
              code: "RESTARTED",
              message: `the daemon's events are numbered afresh (last ${last}, was ${from}): it restarted; replaying what it kept`,
            });
            return subscribe(0);
          }
          if (lastSeq === undefined) lastSeq = last;
          markReady();
        } else if (frame.type === "notice") {
          options.onNotice?.({ code: String(frame.code), message: String(frame.message) });
        } else if (frame.type === "error") {
          const error = frame.error as { code?: string; message?: string };
          options.onNotice?.({ code: error.code ?? "INTERNAL", message: error.message ?? "error" });
        }
      });
      ws.on("error", () => undefined);
      ws.on("close", () => done());
    });
  };

  const run = async () => {
    let delay = RETRY_FIRST_MS;
    while (!closed) {
      const opened = Date.now();
      try {
        await connect();
      } catch (err) {
        // A refusal (a key not authorized, a scope) will not get better by retrying.
        if (isSparError(err) && err.code !== "DAEMON_UNREACHABLE") return end(err);
      }
      if (closed) return;
      if (Date.now() - opened > RETRY_MAX_MS) delay = RETRY_FIRST_MS;
      await new Promise((done) => setTimeout(done, delay));
      delay = Math.min(delay * 2, RETRY_MAX_MS);
    }
  };
  void run();

  return {
    ready,
    close: () => end(),
    async *[Symbol.asyncIterator]() {
      try {
        for (;;) {
          const next = queue.shift();
          if (next) {
            if (queue.length < HIGH_WATER / 2 && socket?.isPaused) socket.resume();
            yield next;
            continue;
          }
          if (closed) {
            if (failure !== undefined) throw failure;
            return;
          }
          await new Promise<void>((done) => {
            wake = done;
          });
        }
      } finally {
        end();
      }
    },
  };
}
