/** The bout each channel chat talks in (channel plugins' substrate): one conversation per chat. */
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
