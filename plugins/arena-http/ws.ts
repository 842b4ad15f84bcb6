/**
 * The event stream and chat over WebSocket at /api/v1/ws (DESIGN §6). JSON text frames.
 * Client → server: {"type":"subscribe","kinds":[…],"fighter_id"?,"since"?} and
 * {"type":"chat","id","fighter_id","message","bout_id"?,"bout"?} and {"type":"cancel","id"} (cancels
 * that chat), checked in ws-frames.ts. Server → client: {"type":"event",…envelope},
 * {"type":"reply","id",…response}, {"type":"error","id"?,"error":{code,message}} and
 * {"type":"notice","code","message"}. A bad frame gets an error frame; the connection stays. A frame
 * over MAX_FRAME_BYTES gets an error frame too, then the close (1009).
 */
import { randomUUID } from "node:crypto";
import websocket, { type WebsocketPluginOptions } from "@fastify/websocket";
import type { FastifyInstance } from "fastify";
import { WebSocket } from "ws";
import {
  cancellation,
  type EventBus,
  isSparError,
  type RingServices,
  SparError,
  type SparEvent,
} from "../../sdk/index.js";
import { socketAccess } from "./access.js";
import { envelope } from "./errors.js";
import type { RateLimiter } from "./rate-limit.js";
import { clientOf } from "./security.js";
import { frameId, parseFrame, type Subscription } from "./ws-frames.js";

/** A client this far behind is cut off (with a notice) rather than buffered without bound. */
export const MAX_BUFFERED_BYTES = 1 << 20;
export const MAX_FRAME_BYTES = 1 << 20;

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
  // ws's types describe the option as the class with its module's statics (Server, …), which a
  // subclass has only at run time through inheritance; ws itself only constructs it.
  type SocketClass = NonNullable<NonNullable<WebsocketPluginOptions["options"]>["WebSocket"]>;
  const socketClass = ArenaSocket as unknown as SocketClass;
  app.register(websocket, {
    options: { maxPayload: MAX_FRAME_BYTES, WebSocket: socketClass },
    // A client's protocol error (a frame over maxPayload, a bad opcode: ws's WS_ERR_* codes) is already
    // being closed cleanly by ws with its status code. The plugin's default handler would also destroy
    // the socket at once, and a socket destroyed with the rest of the client's frame still unread
    // resets the connection: the client would lose the error frame and see 1006 instead of 1009.
    errorHandler: (error, socket, request) => {
      if ((error as NodeJS.ErrnoException).code?.startsWith("WS_ERR_")) {
        request.log.debug({ code: (error as NodeJS.ErrnoException).code }, "websocket client protocol error");
        return;
      }
      request.log.error(error);
      socket.terminate();
    },
  });
  app.register(async (scoped) => {
    // `/api/ws` reaches it too, as every `/api/...` alias does (api-alias.ts).
    scoped.route({
      method: "GET",
      url: "/api/v1/ws",
      schema: {
        operationId: "connectWebSocket",
        summary: "Upgrade to a WebSocket: the daemon's events, and messages to fighters",
        description:
          "Send `Upgrade: websocket`; sign the upgrade request, or pass `?ticket=` from `POST /api/v1/ws/ticket`. README.md (WebSocket) lists the frames.",
      },
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
      handler: async (request) => {
        // Named as asked for: `/api/ws` is the alias (api-alias.ts) of this route.
        const url = request.url === request.originalUrl ? "/api/v1/ws" : "/api/ws";
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
  });
}

/**
 * ws closes a connection whose frame is over `maxPayload` with 1009 as soon as the frame's length is
 * read, before any of it is buffered, and tells the server nothing it could answer with. Its close
 * goes through this method, so the client first gets the error frame every other refusal gets.
 */
class ArenaSocket extends WebSocket {
  override close(code?: number, data?: string | Buffer): void {
    if (code === 1009 && this.readyState === WebSocket.OPEN) {
      const tooLarge = new SparError(
        "PAYLOAD_TOO_LARGE",
        `a frame is at most ${MAX_FRAME_BYTES} bytes; this one is larger, so the connection closes (1009)`,
        { limit_bytes: MAX_FRAME_BYTES },
      );
      this.send(JSON.stringify({ type: "error", error: envelope(tooLarge).error }));
    }
    super.close(code, data);
  }
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
      return send({ type: "error", ...frameId(text), error: envelope(frame).error });
    if (frame.type === "cancel") {
      const chat = chats.get(frame.id);
      if (!chat) {
        const none = new SparError("CONFLICT", `no chat with id "${frame.id}" is running on this connection`);
        return send({ type: "error", id: frame.id, error: envelope(none).error });
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
          send({ type: "error", error: envelope(failed).error });
        },
      );
      return;
    }
    const admitted = admit();
    if (!admitted.ok) {
      const limited = new SparError("RATE_LIMITED", `too many requests: retry in ${admitted.retryAfterS} s`, {
        retry_after_s: admitted.retryAfterS,
      });
      return send({ type: "error", id: frame.id, error: envelope(limited).error });
    }
    if (chats.has(frame.id)) {
      const busy = new SparError(
        "CONFLICT",
        `a chat with id "${frame.id}" is already running on this connection`,
      );
      return send({ type: "error", id: frame.id, error: envelope(busy).error });
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
          bout: frame.bout,
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
          send({ type: "error", id: frame.id, error: envelope(error).error });
        },
      )
      .finally(() => chats.delete(frame.id));
  });
}
