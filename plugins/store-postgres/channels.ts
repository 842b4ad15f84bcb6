/**
 * The channel plugins' records besides their bouts: the deliveries already taken in (the replay
 * check, across restarts and across the daemons sharing the database) and the chats that reached
 * each fighter through an allowed sender. Each write is one statement, atomic across daemons: two
 * nodes given the same delivery at once record it once, and only one of them runs it.
 */
import { SparError } from "../../sdk/index.js";
import type { StoreContext, StoreData } from "./context.js";

export function createChannelRecords(
  ctx: StoreContext,
): Pick<StoreData, "channelDeliveries" | "channelChats"> {
  const { pool } = ctx;
  return {
    channelDeliveries: {
      claim: async (platform, deliveryId, at) =>
        ((
          await pool.query(
            "INSERT INTO channel_deliveries (platform, delivery_id, seen_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
            [key(platform, "platform"), key(deliveryId, "delivery_id"), at],
          )
        ).rowCount ?? 0) > 0,
      prune: async (before) =>
        (await pool.query("DELETE FROM channel_deliveries WHERE seen_at < $1", [before])).rowCount ?? 0,
    },
    channelChats: {
      async record(platform, chat, fighterId, at) {
        await pool.query(
          `INSERT INTO channel_chats (platform, chat, fighter_id, first_at, last_at) VALUES ($1, $2, $3, $4, $4)
           ON CONFLICT (fighter_id, platform, chat) DO UPDATE SET last_at = excluded.last_at`,
          [key(platform, "platform"), key(chat, "chat"), key(fighterId, "fighter_id"), at],
        );
      },
      reached: async (platform, chat, fighterId) =>
        (
          await pool.query(
            "SELECT 1 FROM channel_chats WHERE platform = $1 AND chat = $2 AND fighter_id = $3",
            [key(platform, "platform"), key(chat, "chat"), key(fighterId, "fighter_id")],
          )
        ).rows.length > 0,
    },
  };
}

function key(value: string, field: string): string {
  if (typeof value !== "string" || value === "" || value.length > 256) {
    throw new SparError("VALIDATION_FAILED", `${field} must be a string of 1 to 256 characters`);
  }
  return value;
}
