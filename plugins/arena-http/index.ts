import { definePlugin, SparError } from "../../kernel/sdk.js";
import { findPortOwner } from "./port-owner.js";
import { buildServer } from "./server.js";

export default definePlugin({
  id: "arena-http",
  apply({ hooks, ring, events, config, log }) {
    // Routes and their schemas compile now, on the main thread, while the store derives its key on
    // the thread pool; the port opens only once the daemon is ready, so no request meets a closed store.
    const app = buildServer(ring, events, config, log);
    const compiled = new Promise<void>((done, fail) => app.ready((err) => (err ? fail(err) : done())));
    compiled.catch(() => undefined);

    hooks.daemon.ready.tap(async ({ host, port }) => {
      await compiled;
      try {
        await app.listen({ host, port });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "EADDRINUSE") throw portInUse(host, port);
        throw err;
      }
    });

    hooks.daemon.close.tap(async () => {
      await app.close();
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
