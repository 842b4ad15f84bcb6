/**
 * The channel records an older Spar kept in the Store's own tables (`channel_bouts`,
 * `channel_deliveries`, `channel_chats`), moved once into the channel kit's collections (namespace
 * `channels`, each keyed by the JSON array of what names it, as lib/channels/records.ts writes them;
 * the OpenAI users' bouts, platform `openai`, into the Arena's `openai_bouts`), and the tables
 * dropped: at open, through `moveLegacy` (legacy.ts).
 */
import type pg from "pg";
import type { Cipher } from "./cipher.js";
import { importDocs } from "./collections.js";
import { moveLegacy } from "./legacy.js";

const TABLES = ["channel_bouts", "channel_deliveries", "channel_chats"] as const;

const key = (...parts: string[]) => JSON.stringify(parts);

/** Moves the legacy channel records, if their tables are still there; how many. */
export function moveLegacyChannels(pool: pg.Pool, schema: string, cipher: Cipher): Promise<number> {
  return moveLegacy(pool, schema, TABLES, async (client, tables) => {
    const read = async <R extends object>(table: string, sql: string) =>
      tables.has(table) ? (await client.query<R>(sql)).rows : [];

    const bouts = await read<{
      platform: string;
      chat: string;
      fighter_id: string;
      bout_id: string;
      updated_at: string;
    }>(
      "channel_bouts",
      "SELECT platform, chat, fighter_id, bout_id, updated_at FROM channel_bouts ORDER BY updated_at",
    );
    const chats = bouts.filter((b) => b.platform !== "openai");
    await importDocs(
      client,
      cipher,
      "channels",
      "bouts",
      chats.map((b) => {
        const id = key(b.platform, b.chat, b.fighter_id);
        return { key: id, doc: { id, ...b } };
      }),
    );
    const users = bouts.filter((b) => b.platform === "openai");
    await importDocs(
      client,
      cipher,
      "arena-http",
      "openai_bouts",
      users.map(({ chat, fighter_id, bout_id, updated_at }) => {
        const id = key(chat, fighter_id);
        return { key: id, doc: { id, user: chat, fighter_id, bout_id, updated_at } };
      }),
    );
    const deliveries = await read<{ platform: string; delivery_id: string; seen_at: string }>(
      "channel_deliveries",
      "SELECT platform, delivery_id, seen_at FROM channel_deliveries ORDER BY seen_at",
    );
    await importDocs(
      client,
      cipher,
      "channels",
      "deliveries",
      deliveries.map((d) => {
        const id = key(d.platform, d.delivery_id);
        return { key: id, doc: { id, ...d } };
      }),
    );
    const reached = await read<{
      platform: string;
      chat: string;
      fighter_id: string;
      first_at: string;
      last_at: string;
    }>(
      "channel_chats",
      "SELECT platform, chat, fighter_id, first_at, last_at FROM channel_chats ORDER BY first_at",
    );
    await importDocs(
      client,
      cipher,
      "channels",
      "chats",
      reached.map((c) => {
        const id = key(c.platform, c.chat, c.fighter_id);
        return { key: id, doc: { id, ...c } };
      }),
    );
    for (const table of tables) await client.query(`DROP TABLE ${table}`);
    return bouts.length + deliveries.length + reached.length;
  });
}
