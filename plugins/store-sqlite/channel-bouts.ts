/**
 * The channel plugins' substrate: the bout each chat talks in (one conversation per chat), the
 * deliveries already taken in (the replay check) and the chats that reached each fighter.
 */
import type Database from "better-sqlite3-multiple-ciphers";
import { SparError } from "../../sdk/index.js";
import type { StoreData } from "./sync-store.js";

function key(value: string, field: string): string {
  if (typeof value !== "string" || value === "" || value.length > 256) {
    throw new SparError("VALIDATION_FAILED", `${field} must be a string of 1 to 256 characters`);
  }
  return value;
}

export function createChannelBouts(
  db: Database.Database,
  deps: { now(): string; requireBout(boutId: string): void },
): StoreData["channelBouts"] {
  const s = {
    get: db
      .prepare<[string, string, string], string>(
        "SELECT bout_id FROM channel_bouts WHERE platform = ? AND chat = ? AND fighter_id = ?",
      )
      .pluck(),
    set: db.prepare<[string, string, string, string, string], void>(
      `INSERT INTO channel_bouts (platform, chat, fighter_id, bout_id, updated_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (platform, chat, fighter_id) DO UPDATE SET bout_id = excluded.bout_id, updated_at = excluded.updated_at`,
    ),
  };
  return {
    get: (platform, chat, fighterId) =>
      s.get.get(key(platform, "platform"), key(chat, "chat"), key(fighterId, "fighter_id")),
    set(platform, chat, fighterId, boutId) {
      deps.requireBout(boutId);
      s.set.run(
        key(platform, "platform"),
        key(chat, "chat"),
        key(fighterId, "fighter_id"),
        boutId,
        deps.now(),
      );
    },
  };
}

export function createChannelDeliveries(db: Database.Database): StoreData["channelDeliveries"] {
  const s = {
    claim: db.prepare<[string, string, string], void>(
      "INSERT INTO channel_deliveries (platform, delivery_id, seen_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
    ),
    prune: db.prepare<[string], void>("DELETE FROM channel_deliveries WHERE seen_at < ?"),
  };
  return {
    claim: (platform, deliveryId, at) =>
      s.claim.run(key(platform, "platform"), key(deliveryId, "delivery_id"), at).changes > 0,
    prune: (before) => s.prune.run(before).changes,
  };
}

export function createChannelChats(db: Database.Database): StoreData["channelChats"] {
  const s = {
    record: db.prepare<[string, string, string, string, string], void>(
      `INSERT INTO channel_chats (platform, chat, fighter_id, first_at, last_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (fighter_id, platform, chat) DO UPDATE SET last_at = excluded.last_at`,
    ),
    reached: db
      .prepare<[string, string, string], number>(
        "SELECT 1 FROM channel_chats WHERE platform = ? AND chat = ? AND fighter_id = ?",
      )
      .pluck(),
  };
  return {
    record(platform, chat, fighterId, at) {
      s.record.run(key(platform, "platform"), key(chat, "chat"), key(fighterId, "fighter_id"), at, at);
    },
    reached: (platform, chat, fighterId) =>
      s.reached.get(key(platform, "platform"), key(chat, "chat"), key(fighterId, "fighter_id")) === 1,
  };
}
