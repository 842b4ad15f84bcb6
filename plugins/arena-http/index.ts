import type { Socket } from "node:net";
import type { FastifyInstance } from "fastify";
import { definePlugin, parseListen, SparError } from "../../sdk/index.js";
import { isLoopbackHost, portInUse } from "../../sdk/kits/http.js";
import { createPluginRoutes } from "./plugin-routes.js";
import { buildServer } from "./server.js";
import type { ArenaSettings } from "./settings.js";
import { buildWebhookServer } from "./webhooks.js";

const SHUTDOWN_GRACE_MS = 3000;

export default definePlugin<ArenaSettings>({
  id: "arena-http",
  apply({ hooks, ring, events, log, data }, settings) {
    // Routes and their schemas compile now, on the main thread, while the store derives its key on
    // the thread pool; the port opens only once the daemon is ready, so no request meets a closed store.
    const routes = createPluginRoutes();
    const app = buildServer(ring, events, settings, log, routes, data);
    const compiled = new Promise<void>((done, fail) => app.ready((err) => (err ? fail(err) : done())));
    compiled.catch(() => undefined);
    let webhooks: FastifyInstance | undefined;

    hooks.daemon.ready.tap(async ({ host, port, routes: added }) => {
      if (!isLoopbackHost(host) && (await ring.auth.keyCount()) === 0) {
        throw new SparError(
          "CONFIG_INVALID",
          `refusing to listen on ${host}:${port}, reachable from other machines, with no authorized key. ` +
            "Authorize one (spar key add <name> <public key>) or listen on 127.0.0.1",
        );
      }
      for (const route of added) routes.add(route);
      await compiled;
      await listen(app, host, port);
      if (routes.hasWebhooks()) {
        const at = parseListen(settings.channels.webhook_listen, "[channels] webhook_listen");
        webhooks = buildWebhookServer(routes, settings, log);
        await listen(webhooks, at.host, at.port);
        log.info(
          `webhooks listening on http://${at.host.includes(":") ? `[${at.host}]` : at.host}:${at.port}`,
        );
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
      const closed = Promise.all([app.close(), webhooks?.close()]);
      const grace = new Promise((done) => setTimeout(done, SHUTDOWN_GRACE_MS).unref());
      await Promise.race([closed, grace]);
      for (const socket of sockets) socket.destroy();
      await closed;
    });
  },
});

async function listen(app: FastifyInstance, host: string, port: number): Promise<void> {
  try {
    await app.listen({ host, port });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EADDRINUSE")
      throw portInUse(host, port, "api_listen in config.toml (or SPAR_API_LISTEN)");
    throw err;
  }
}
