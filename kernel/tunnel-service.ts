import type { SparConfig } from "../sdk/config.js";
import { SparError } from "../sdk/errors.js";
import type { RingHooks } from "../sdk/hooks.js";
import type { TunnelInfo } from "../sdk/plugin-contracts.js";
import type { PluginHost } from "./host/plugin-host.js";

/**
 * `ring.tunnel`: the public URL channels' webhooks are reached at. The `[plugins] tunnel` plugin is
 * activated and opens the tunnel to the webhook listener the first time a channel asks; every later
 * call shares that one tunnel, and a failed open is tried again on the next call.
 */
export function createTunnelService(config: SparConfig, host: PluginHost, hooks: RingHooks) {
  let tunnel: Promise<TunnelInfo> | undefined;
  return {
    open(): Promise<TunnelInfo> {
      tunnel ??= (async () => {
        await host.activatePlugin(config.plugins.tunnel);
        const listen = String(config.sections.channels?.webhook_listen ?? "");
        const info = await hooks.tunnel.open.promise({ target: `http://${listen}` });
        if (!info) {
          throw new SparError(
            "CONFIG_INVALID",
            `the tunnel plugin ${config.plugins.tunnel} opened no tunnel`,
          );
        }
        return info;
      })();
      tunnel.catch(() => {
        tunnel = undefined;
      });
      return tunnel;
    },
  };
}
