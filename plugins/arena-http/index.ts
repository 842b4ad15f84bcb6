import type { Socket } from "node:net";
import { definePlugin, SparError } from "../../kernel/sdk.js";
import { isLoopbackHost } from "../../lib/loopback.js";
import { findPortOwner } from "./port-owner.js";
import { buildServer } from "./server.js";

const SHUTDOWN_GRACE_MS = 3000;

export default definePlugin({
  id: "arena-http",
  apply({ hooks, ring, events, config, log }) {
    // Routes and their schemas compile now, on the main thread, while the store derives its key on
    // the thread pool; the port opens only once the daemon is ready, so no request meets a closed store.
    const app = buildServer(ring, events, config, log);
    const compiled = new Promise<void>((done, fail) => app.ready((err) => (err ? fail(err) : done())));
    compiled.catch(() => undefined);

    hooks.daemon.ready.tap(async ({ host, port }) => {
      if (!isLoopbackHost(host) && (await ring.auth.keyCount()) === 0) {
        throw new SparError(
          "CONFIG_INVALID",
          `refusing to listen on ${host}:${port}, reachable from other machines, with no authorized key. ` +
            "Authorize one (spar key add <name> <public key>) or listen on 127.0.0.1",
        );
      }
      await compiled;
      try {
        await app.listen({ host, port });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "EADDRINUSE") throw portInUse(host, port);
        throw err;
      }
    });

    // Sockets the HTTP server no longer tracks (an upgrade refused with 401 leaves one with the
    // client) would hold shutdown open for as long as the client keeps them: give in-flight work a
    // grace period, then cut whatever is left.
    const sockets = new Set<Socket>();
    app.server.on("connection", (socket: Socket) => {
      sockets.add(socket);
      socket.once("close", () => sockets.delete(socket));
    });

    hooks.daemon.close.tap(async () => {
      const closed = app.close();
      const grace = new Promise((done) => setTimeout(done, SHUTDOWN_GRACE_MS).unref());
      await Promise.race([closed, grace]);
      for (const socket of sockets) socket.destroy();
      await closed;
    });
  },
});

function portInUse(host: string, port: number): SparError {
  const owner = findPortOwner(port);
  const who = owner ? ` by ${owner.command} (pid ${owner.pid})` : "";
  const fix = owner
    ? `stop that process (kill ${owner.pid}) and start again`
    : `find the process holding it (lsof -i :${port}) and stop it`;
  return new SparError(
    "PORT_IN_USE",
    `port ${port} on ${host} is already in use${who}. Fix: ${fix}, or set api_listen in config.toml (or SPAR_API_LISTEN) to a free address`,
    { port },
  );
}
