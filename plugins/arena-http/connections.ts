/**
 * Limits on connections, the same on the API and the webhook listener (`[api]` keys, defaults in
 * plugin.json): without them 1,024 idle sockets from one client blocked the API for a minute.
 * - A socket must finish its first request's headers within `idle_timeout_ms`, or it is closed: a
 *   client that connects and says nothing (or drips a header a byte at a time) holds nothing long.
 * - Between requests, a kept-alive socket closes after `keep_alive_timeout_ms`; a request's headers
 *   must arrive within `headers_timeout_ms` and its whole body within `request_timeout_ms` (sending
 *   the answer is not bounded: a fighter's turn may take minutes).
 * - One peer address holds at most `max_connections_per_peer` sockets that serve no request: ones
 *   that have not yet sent a request, and kept-alive ones between requests. A newcomer past that is
 *   closed on arrival, and a kept-alive socket past it is closed after its answer. A socket while it
 *   serves a request, or once it is a WebSocket (capped on its own), does not count: a client with
 *   300 messages in flight is working, not holding. That is the reserve: one address at its cap
 *   leaves the rest of `max_connections` to every other client, a signed one on another machine (or
 *   another loopback address) included.
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { ArenaSettings } from "./settings.js";

/** Fastify's own options for the timeouts it sets on the Node server. */
export function serverTimeouts(api: ArenaSettings["api"]) {
  return { requestTimeout: api.request_timeout_ms, keepAliveTimeout: api.keep_alive_timeout_ms };
}

/** `upgrades`: the listener serves WebSockets (a socket that upgraded has sent its request). */
export function guardConnections(server: Server, api: ArenaSettings["api"], upgrades: boolean): void {
  server.maxConnections = api.max_connections;
  server.headersTimeout = api.headers_timeout_ms;
  /** Each peer's sockets that serve no request now. */
  const idle = new Map<string, Set<Socket>>();
  /** Sockets that have not yet sent a whole request head, with their deadline. */
  const waiting = new Map<Socket, NodeJS.Timeout>();
  const peerOf = (socket: Socket) => socket.remoteAddress ?? "";
  const busy = (socket: Socket) => {
    clearTimeout(waiting.get(socket));
    waiting.delete(socket);
    const held = idle.get(peerOf(socket));
    held?.delete(socket);
    if (held?.size === 0) idle.delete(peerOf(socket));
  };
  /** Counts the socket as idle, unless its peer already holds its share: then it is closed. */
  const rest = (socket: Socket): boolean => {
    const peer = peerOf(socket);
    const held = idle.get(peer) ?? new Set<Socket>();
    if (held.size >= api.max_connections_per_peer) return false;
    held.add(socket);
    idle.set(peer, held);
    return true;
  };
  server.on("connection", (socket: Socket) => {
    if (!rest(socket)) {
      socket.destroy();
      return;
    }
    waiting.set(
      socket,
      setTimeout(() => socket.destroy(), api.idle_timeout_ms),
    );
    socket.once("close", () => busy(socket));
  });
  server.on("request", (request: IncomingMessage, response: ServerResponse) => {
    const { socket } = request;
    busy(socket);
    response.once("finish", () => {
      if (!socket.destroyed && !rest(socket)) socket.end();
    });
  });
  // Only where something handles upgrades: a lone listener would take them over and leave them hanging.
  if (upgrades) server.on("upgrade", (request: IncomingMessage) => busy(request.socket));
}
