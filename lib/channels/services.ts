/**
 * `ring.channels`: the platforms configured in config.toml, their adapters (the plugin activated on
 * first use), and the channel records the store keeps for them (each chat's bout, the deliveries
 * already taken in, the chats that reached each fighter). Kept out of the Ring's own file, which has
 * a size budget; the store is looked up on each use, since it opens after the plugins are applied.
 */
import type { ChannelAdapter } from "../../sdk/plugin-contracts.js";
import type { RingServices } from "../../sdk/services.js";
import type { Store } from "../../sdk/store-types.js";

export function channelServices(
  requireStore: () => Store,
  configured: readonly string[],
  /** Activates the platform's plugin and asks it for its adapter. */
  adapter: (platform: string) => Promise<ChannelAdapter | undefined>,
): RingServices["channels"] {
  return {
    get bouts() {
      return requireStore().channelBouts;
    },
    get deliveries() {
      return requireStore().channelDeliveries;
    },
    get chats() {
      return requireStore().channelChats;
    },
    configured: () => [...configured],
    async resolve(platform) {
      return configured.includes(platform) ? adapter(platform) : undefined;
    },
  };
}
