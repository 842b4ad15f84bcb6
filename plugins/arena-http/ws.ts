/**
 * The event stream and chat over WebSocket at /api/v1/ws (DESIGN §6). JSON text frames.
 * Client → server: {"type":"subscribe","kinds":[…],"fighter_id"?,"since"?} and
 * {"type":"chat","id","fighter_id","message","bout_id"?} and {"type":"cancel","id"} (cancels that chat). Server → client: {"type":"event",…envelope},
 * {"type":"reply","id",…response}, {"type":"error","id"?,"error":{code,message}} and
 * {"type":"notice","code","message"}. A bad frame gets an error frame; the connection stays.
 */
import { randomUUID } from "node:crypto";
import websocket from "@fastify/websocket";
import type { FastifyInstance } from "fastify";
import type { WebSocket } from "ws";
import {
  cancellation,
  type EventBus,
  findForbiddenKey,
  forbiddenKeyMessage,
  isSparError,
  type RingServices,
  SparError,
  type SparEvent,
} from "../../sdk/index.js";
import { socketAccess } from "./access.js";
import type { RateLimiter } from "./rate-limit.js";
import { clientOf } from "./security.js";

/** A client this far behind is cut off (with a notice) rather than buffered without bound. */
export const MAX_BUFFERED_BYTES = 1 << 20;
export const MAX_FRAME_BYTES = 1 << 20;

interface Subscription {
  kinds: Set<string> | "all";
  fighter_id?: string;
}

export interface WebSocketLimits {
  /** The API's limiter: a chat frame counts like an HTTP message, for the same key or peer. */
  limiter: RateLimiter;
  maxPerPeer: number;
  maxTotal: number;
}

export function registerWebSocket(
  app: FastifyInstance,
  ring: RingServices,
  events: EventBus,
  limits: WebSocketLimits,
): void {
  const open = new Map<string, number>();
  let total = 0;
  app.register(websocket, { options: { maxPayload: MAX_FRAME_BYTES } });
  app.register(async (scoped) => {
    // The same socket under both route families, like every other route.
    for (const url of ["/api/v1/ws", "/api/ws"]) {
      scoped.route({
        method: "GET",
        url,
        // Before the upgrade, so a refusal is a plain HTTP error and no socket is kept.
        preValidation: async (request) => {
          const peer = request.ip;
          if ((open.get(peer) ?? 0) >= limits.maxPerPeer || total >= limits.maxTotal) {
            const which =
              total >= limits.maxTotal
                ? `${limits.maxTotal} in total ([api] websocket_max_total)`
                : `${limits.maxPerPeer} from ${peer} ([api] websocket_max_per_peer)`;
            throw new SparError("TOO_MANY_CONNECTIONS", `too many open WebSockets: at most ${which}`);
          }
        },
        // A plain GET (no Upgrade header) learns what this route is for.
        handler: async () => {
          throw new SparError(
            "UPGRADE_REQUIRED",
            `${url} is a WebSocket: connect with an Upgrade: websocket request`,
          );
        },
        wsHandler: (socket, request) => {
          const peer = request.ip;
          open.set(peer, (open.get(peer) ?? 0) + 1);
          total += 1;
          socket.once("close", () => {
            total -= 1;
            const left = (open.get(peer) ?? 1) - 1;
            if (left > 0) open.set(peer, left);
            else open.delete(peer);
          });
          serve(socket, ring, events, () => limits.limiter.take(clientOf(request)), {
            keyId: request.sparKeyId,
            access: socketAccess(ring, request.sparScope),
          });
        },
      });
    }
  });
}

function serve(
  socket: WebSocket,
  ring: RingServices,
  events: EventBus,
  admit: () => ReturnType<RateLimiter["take"]>,
  caller: { keyId: string | undefined; access: ReturnType<typeof socketAccess> },
): void {
  let subscription: Subscription | undefined;
  /** This connection's running chats by the client's id. */
  const chats = new Map<string, AbortController>();
  /** Makes the client's chat ids unique daemon-wide in the deltas' `request_id`. */
  const prefix = `${randomUUID()}:`;
  let closing = false;

  const send = (frame: Record<string, unknown>) => {
    if (closing || socket.readyState !== socket.OPEN) return;
    if (socket.bufferedAmount > MAX_BUFFERED_BYTES) {
      closing = true;
      socket.send(
        JSON.stringify({
          type: "notice",
          code: "SLOW_CONSUMER",
          message: `more than ${MAX_BUFFERED_BYTES} bytes are waiting for this client: closing; reconnect with "since" to resume`,
        }),
      );
      socket.close(1013, "slow consumer");
      return;
    }
    socket.send(JSON.stringify(frame));
  };

  const wanted = (event: SparEvent): boolean => {
    // A chat's own deltas always reach the client that asked, subscribed or not.
    if (event.kind === "message.delta" && event.request_id?.startsWith(prefix)) return true;
    if (!subscription || !caller.access.sees(event)) return false;
    if (subscription.fighter_id && "fighter_id" in event && event.fighter_id !== subscription.fighter_id)
      return false;
    return subscription.kinds === "all" || subscription.kinds.has(event.kind);
  };

  /** Live events that arrive while a resumed subscription's backlog is read, sent after it. */
  let held: SparEvent[] | undefined;
  const deliver = (event: SparEvent) => {
    if (!wanted(event)) return;
    // Chat ids belong to their connection: the client sees its own id, no one else's.
    if (event.kind === "message.delta" && event.request_id !== undefined) {
      if (!event.request_id.startsWith(prefix))
        return send({ type: "event", ...event, request_id: undefined });
      return send({ type: "event", ...event, request_id: event.request_id.slice(prefix.length) });
    }
    send({ type: "event", ...event });
  };
  const unsubscribe = events.subscribe((event) => (held ? held.push(event) : deliver(event)));
  socket.on("close", () => {
    closing = true;
    unsubscribe();
    // The client is gone: its chats are cancelled, as an HTTP client's would be.
    for (const chat of chats.values()) chat.abort(cancellation("its WebSocket closed"));
  });

  socket.on("message", (data, isBinary) => {
    const text = isBinary ? undefined : data.toString();
    const frame = parseFrame(text);
    // A refused frame's error carries its id when it had one, so the client can match it.
    if (frame instanceof SparError)
      return send({ type: "error", ...frameId(text), error: frame.toJSON().error });
    if (frame.type === "cancel") {
      const chat = chats.get(frame.id);
      if (!chat) {
        const none = new SparError("CONFLICT", `no chat with id "${frame.id}" is running on this connection`);
        return send({ type: "error", id: frame.id, error: none.toJSON().error });
      }
      chat.abort(cancellation("a WebSocket cancel frame"));
      return;
    }
    if (frame.type === "subscribe") {
      subscription = frame.subscription;
      if (frame.since === undefined) return send({ type: "subscribed", last_seq: events.lastSeq });
      const since = frame.since;
      const waiting: SparEvent[] = [];
      held = waiting;
      events.since(since).then(
        (backlog) => {
          const oldest = backlog[0]?.seq;
          if (oldest !== undefined && oldest > since + 1) {
            send({
              type: "notice",
              code: "HISTORY_GAP",
              message: `events after ${since} before ${oldest} are no longer kept`,
            });
          }
          for (const event of backlog) deliver(event);
          // A cluster bus may deliver live what the backlog also held: each event goes out once.
          const sent = new Set(backlog.map((e) => e.seq));
          if (held === waiting) held = undefined;
          for (const event of waiting) if (!sent.has(event.seq)) deliver(event);
          send({ type: "subscribed", last_seq: events.lastSeq });
        },
        (err: unknown) => {
          if (held === waiting) held = undefined;
          for (const event of waiting) deliver(event);
          const failed = new SparError("INTERNAL", `the event history could not be read: ${String(err)}`);
          send({ type: "error", error: failed.toJSON().error });
        },
      );
      return;
    }
    const admitted = admit();
    if (!admitted.ok) {
      const limited = new SparError("RATE_LIMITED", `too many requests: retry in ${admitted.retryAfterS} s`, {
        retry_after_s: admitted.retryAfterS,
      });
      return send({ type: "error", id: frame.id, error: limited.toJSON().error });
    }
    if (chats.has(frame.id)) {
      const busy = new SparError(
        "CONFLICT",
        `a chat with id "${frame.id}" is already running on this connection`,
      );
      return send({ type: "error", id: frame.id, error: busy.toJSON().error });
    }
    const controller = new AbortController();
    chats.set(frame.id, controller);
    caller.access
      .mayChat(caller.keyId, frame.fighter_id)
      .then((refusal) => {
        if (refusal) throw refusal;
        return ring.fighters.message(frame.fighter_id, frame.message, {
          request_id: `${prefix}${frame.id}`,
          bout_id: frame.bout_id,
          signal: controller.signal,
        });
      })
      .then(
        // After the chat's own deltas, which a cluster bus delivers a round trip later.
        async (result) => {
          await events.delivered();
          send({ type: "reply", id: frame.id, ...result });
        },
        (err: unknown) => {
          const error = isSparError(err) ? err : new SparError("INTERNAL", "internal error");
          send({ type: "error", id: frame.id, error: error.toJSON().error });
        },
      )
      .finally(() => chats.delete(frame.id));
  });
}

type Frame =
  | { type: "subscribe"; subscription: Subscription; since?: number }
  | { type: "chat"; id: string; fighter_id: string; message: string; bout_id?: string }
  | { type: "cancel"; id: string };

/** Checks a client frame by hand: a few fields, each with a message that says what is wrong. */
function parseFrame(text: string | undefined): Frame | SparError {
  const bad = (message: string) => new SparError("VALIDATION_FAILED", message);
  if (text === undefined) return bad("frames are JSON text, not binary");
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return bad("the frame is not valid JSON");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return bad("a frame is a JSON object");
  const forbidden = findForbiddenKey(value);
  if (forbidden) return bad(forbiddenKeyMessage(forbidden, "frame"));
  const f = value as Record<string, unknown>;
  if (f.type === "subscribe") {
    const kinds = f.kinds ?? ["*"];
    if (!Array.isArray(kinds) || !kinds.every((k) => typeof k === "string"))
      return bad("kinds must be an array of strings");
    if (f.fighter_id !== undefined && typeof f.fighter_id !== "string")
      return bad("fighter_id must be a string");
    if (f.since !== undefined && (!Number.isInteger(f.since) || (f.since as number) < 0)) {
      return bad("since must be a non-negative integer (an event's seq)");
    }
    return {
      type: "subscribe",
      subscription: {
        kinds: kinds.includes("*") ? "all" : new Set(kinds),
        fighter_id: f.fighter_id as string | undefined,
      },
      since: f.since as number | undefined,
    };
  }
  if (f.type === "chat") {
    for (const field of ["id", "fighter_id", "message"]) {
      if (typeof f[field] !== "string" || f[field] === "")
        return bad(`chat needs a non-empty string "${field}"`);
    }
    if (f.bout_id !== undefined && typeof f.bout_id !== "string") return bad("bout_id must be a string");
    return {
      type: "chat",
      id: f.id as string,
      fighter_id: f.fighter_id as string,
      message: f.message as string,
      bout_id: f.bout_id as string | undefined,
    };
  }
  if (f.type === "cancel") {
    if (typeof f.id !== "string" || f.id === "")
      return bad('cancel needs the non-empty string "id" of a chat');
    return { type: "cancel", id: f.id };
  }
  return bad(`unknown frame type ${JSON.stringify(f.type)}; use "subscribe", "chat" or "cancel"`);
}

/** The `id` of a frame that could not be accepted, when it has a string one. */
function frameId(text: string | undefined): { id?: string } {
  try {
    const value: unknown = JSON.parse(text ?? "");
    const id = typeof value === "object" && value !== null ? (value as { id?: unknown }).id : undefined;
    return typeof id === "string" ? { id } : {};
  } catch {
    return {};
  }
}
