/**
 * The channel kit's records, in the collections the channel plugins and moves-channels declare alike
 * under the namespace "channels" (each plugin's `api.data`): the bout each chat talks to its fighter
 * in (one conversation per chat), the deliveries already taken in (the replay check, across restarts
 * and across the daemons sharing a store; kept two days, `retention`), and the chats that reached a
 * fighter through a sender on the channel's allowlist (where its `channel_notify` may post).
 *
 * A record's key is the JSON array of what names it (`["telegram","42","<fighter id>"]`), so no
 * platform, chat or delivery id can make two records share one.
 */
import type { Collection, PluginData, RingServices, TxCollection } from "../../sdk/index.js";
import { SparError } from "../../sdk/index.js";

/** `channels/bouts`: the bout a chat talks to its fighter in. */
export type ChannelBoutDoc = {
  id: string;
  platform: string;
  chat: string;
  fighter_id: string;
  bout_id: string;
  updated_at: string;
};

/** `channels/deliveries`: a delivery taken in, by platform and the platform's delivery id. */
export type ChannelDeliveryDoc = { id: string; platform: string; delivery_id: string; seen_at: string };

/** `channels/chats`: a chat that reached a fighter through an allowed sender. */
export type ChannelChatDoc = {
  id: string;
  platform: string;
  chat: string;
  fighter_id: string;
  first_at: string;
  last_at: string;
};

/** The channel kit's records (`createChannelRecords`): each chat's bout, the deliveries taken in, the chats that reached a fighter. */
export interface ChannelRecords {
  /** The bout each channel chat talks to its fighter in (one conversation per chat). */
  readonly bouts: {
    get(platform: string, chat: string, fighterId: string): Promise<string | undefined>;
    /** BOUT_NOT_FOUND for an unknown bout. */
    set(platform: string, chat: string, fighterId: string, boutId: string): Promise<void>;
  };
  /**
   * The deliveries already taken in, by platform and the platform's delivery id (Telegram's
   * update_id, Slack's event_id, Discord's interaction or message id), so a delivery replayed after
   * a restart is still a replay. Kept two days (the collection's retention), longer than each
   * platform's own window (a delivery older than it is refused on its date).
   */
  readonly deliveries: {
    /** Records the delivery as seen at `at` (ISO time); false when it was already recorded. */
    claim(platform: string, deliveryId: string, at: string): Promise<boolean>;
  };
  /** The chats that reached a fighter through an allowed sender: `channel_notify`'s targets. */
  readonly chats: {
    /** Records (or touches) that `chat` of `platform` reached `fighterId`, at `at` (ISO time). */
    record(platform: string, chat: string, fighterId: string, at: string): Promise<void>;
    /** Whether `chat` of `platform` ever reached `fighterId` that way. */
    reached(platform: string, chat: string, fighterId: string): Promise<boolean>;
  };
}

/** A platform, chat, fighter or delivery id: 1 to 256 characters (VALIDATION_FAILED otherwise). */
export function recordKey(...parts: [value: string, field: string][]): string {
  for (const [value, field] of parts) {
    if (typeof value !== "string" || value === "" || value.length > 256) {
      throw new SparError("VALIDATION_FAILED", `${field} must be a string of 1 to 256 characters`);
    }
  }
  return JSON.stringify(parts.map(([value]) => value));
}

/**
 * The records over a channel plugin's `api.data` (declaring the "channels" collections). `ring`
 * checks that a bout exists before a chat is pointed at it.
 */
export function createChannelRecords(data: PluginData, ring: Pick<RingServices, "bouts">): ChannelRecords {
  const bouts = data.bouts as Collection<ChannelBoutDoc>;
  const deliveries = data.deliveries as Collection<ChannelDeliveryDoc>;
  const chats = data.chats as Collection<ChannelChatDoc>;
  const chatKey = (platform: string, chat: string, fighterId: string) =>
    recordKey([platform, "platform"], [chat, "chat"], [fighterId, "fighter_id"]);

  return {
    bouts: {
      get: async (platform, chat, fighterId) =>
        (await bouts.get(chatKey(platform, chat, fighterId)))?.bout_id,
      async set(platform, chat, fighterId, boutId) {
        const id = chatKey(platform, chat, fighterId);
        await ring.bouts.turns(boutId); // BOUT_NOT_FOUND for an unknown bout
        await bouts.put({
          id,
          platform,
          chat,
          fighter_id: fighterId,
          bout_id: boutId,
          updated_at: new Date().toISOString(),
        });
      },
    },
    deliveries: {
      // One insert decides: of two copies arriving at once (or at two daemons), exactly one is added.
      claim: async (platform, deliveryId, at) =>
        deliveries.add({
          id: recordKey([platform, "platform"], [deliveryId, "delivery_id"]),
          platform,
          delivery_id: deliveryId,
          seen_at: at,
        }),
    },
    chats: {
      async record(platform, chat, fighterId, at) {
        const id = chatKey(platform, chat, fighterId);
        await data.transaction(async (tx) => {
          const rows = tx.chats as TxCollection<ChannelChatDoc>;
          const known = await rows.get(id);
          rows.put({
            id,
            platform,
            chat,
            fighter_id: fighterId,
            first_at: known?.first_at ?? at,
            last_at: at,
          });
        });
      },
      reached: async (platform, chat, fighterId) =>
        (await chats.get(chatKey(platform, chat, fighterId))) !== undefined,
    },
  };
}
