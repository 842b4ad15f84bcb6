/**
 * Limits on connections, the same on the API and the webhook listener (`[api]` keys, defaults in
 * plugin.json): without them 1,024 idle sockets from one client blocked the API for a minute.
 * - A socket must finish its first request's headers within `idle_timeout_ms`, or it is closed: a
 *   client that connects and says nothing (or drips a header a byte at a time) holds nothing long.
 * - Between requests, a kept-alive socket closes after `keep_alive_timeout_ms`; a request's headers
 *   must arrive within `headers_timeout_ms` and its whole body within `request_timeout_ms` (sending
 *   the answer is not bounded: a fighter's turn may take minutes).
 * - One peer address holds at most `max_connections_per_peer` sockets; more are closed on arrival.
 *   That is the reserve: one address at its cap leaves the rest of `max_connections` to every other
 *   client, a signed one on another machine (or another loopback address) included.
 */
import type { Server } from "node:http";
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
  const perPeer = new Map<string, number>();
  /** Sockets that have not yet sent a whole request head, with their deadline. */
  const waiting = new Map<Socket, NodeJS.Timeout>();
  const started = (socket: Socket) => {
    clearTimeout(waiting.get(socket));
    waiting.delete(socket);
  };
  server.on("connection", (socket: Socket) => {
    const peer = socket.remoteAddress ?? "";
    const held = perPeer.get(peer) ?? 0;
    if (held >= api.max_connections_per_peer) {
      socket.destroy();
      return;
    }
    perPeer.set(peer, held + 1);
    waiting.set(
      socket,
      setTimeout(() => socket.destroy(), api.idle_timeout_ms),
    );
    socket.once("close", () => {
      started(socket);
      const left = (perPeer.get(peer) ?? 1) - 1;
      if (left > 0) perPeer.set(peer, left);
      else perPeer.delete(peer);
    });
  });
  server.on("request", (request: { socket: Socket }) => started(request.socket));
  // Only where something handles upgrades: a lone listener would take them over and leave them hanging.
  if (upgrades) server.on("upgrade", (request: { socket: Socket }) => started(request.socket));
}
