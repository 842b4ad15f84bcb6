/**
 * `ring.channels`: the platforms configured in config.toml and their adapters (the plugin activated
 * on first use). Kept out of the Ring's own file, which has a size budget. The channel records (each
 * chat's bout, the deliveries taken in, the chats that reached each fighter) are the channel kit's
 * own collections (records.ts), not the Ring's.
 */
import type { ChannelAdapter } from "../../sdk/plugin-contracts.js";
import type { RingServices } from "../../sdk/services.js";

export function channelServices(
  configured: readonly string[],
  /** Activates the platform's plugin and asks it for its adapter. */
  adapter: (platform: string) => Promise<ChannelAdapter | undefined>,
): RingServices["channels"] {
  return {
    configured: () => [...configured],
    async resolve(platform) {
      return configured.includes(platform) ? adapter(platform) : undefined;
    },
  };
}
