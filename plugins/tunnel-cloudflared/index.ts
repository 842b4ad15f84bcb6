/**
 * The tunnel (kind `tunnel`, the `[plugins] tunnel` slot's default): the public URL that forwards
 * to the webhook listener, for the channels whose platforms deliver webhooks. The kernel activates it
 * the first time a channel (or `GET /api/v1/tunnel`) asks for the URL, so nothing runs for a daemon
 * without channels. Three modes, `[tunnel] mode`:
 * - `quick`: `cloudflared tunnel --url <listener>`, a Cloudflare quick tunnel with no account; its
 *   `https://….trycloudflare.com` URL is new at every start, so channels register it at every start.
 * - `named`: `cloudflared tunnel run --url <listener> <name>`, a tunnel made beforehand with
 *   `cloudflared tunnel create` and routed to `hostname`: the URL is `https://<hostname>`, always.
 * - `manual`: the configured `url` (a reverse proxy of your own); nothing is started.
 * If cloudflared dies later, the error is logged and shown by `GET /api/v1/tunnel` (and `spar channel
 * status`); it is not restarted, since a new quick URL would need every webhook registered again.
 */
import { definePlugin, isSparError, SparError, type TunnelInfo } from "../../sdk/index.js";
import { cloudflaredEnv, type RunningCloudflared, startCloudflared } from "./cloudflared.js";
import { type TunnelSettings, tunnelTarget } from "./settings.js";

/** How long cloudflared has to bring a tunnel up. */
const OPEN_TIMEOUT_MS = 30_000;

export default definePlugin<{ tunnel: TunnelSettings }>({
  id: "tunnel-cloudflared",
  apply({ hooks, log, home, env }, { tunnel: settings }) {
    const closing = new AbortController();
    let running: RunningCloudflared | undefined;

    hooks.tunnel.open.tap(async ({ target }) => {
      if (settings.mode === "manual") {
        if (!settings.url) {
          throw new SparError("CONFIG_INVALID", '[tunnel] mode = "manual" needs url = "https://…"');
        }
        return { url: settings.url.replace(/\/+$/, ""), mode: "manual" };
      }
      const spec = tunnelTarget(settings, target, home);
      // A tunnel asked for again (the last attempt failed) replaces whatever is left of the last one.
      await running?.stop();
      running = await startCloudflared({
        executable: spec.executable,
        args: spec.args,
        quick: settings.mode === "quick",
        timeoutMs: OPEN_TIMEOUT_MS,
        log,
        signal: closing.signal,
        env: cloudflaredEnv(env),
      }).catch((err: unknown) => {
        // The mode beside the reason, so `GET /api/v1/tunnel` says which tunnel could not open.
        if (isSparError(err)) err.extra.mode = settings.mode;
        throw err;
      });
      const url = spec.url ?? running.url;
      if (!url) throw new SparError("PLUGIN_FAILED", "cloudflared printed no tunnel URL");
      const info: TunnelInfo = { url, mode: settings.mode };
      running.onExit((how) => {
        info.error = `cloudflared stopped (${how}): ${url} no longer reaches this daemon; restart the daemon to open the tunnel again`;
        log.error("the tunnel is down: cloudflared stopped", { how, url });
      });
      log.info("tunnel open", { mode: settings.mode, url });
      return info;
    });

    hooks.daemon.close.tap(async () => {
      closing.abort();
      await running?.stop();
    });
  },
});
