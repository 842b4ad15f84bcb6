/**
 * The channel contract's Telegram driver: the fake Bot API (test/fakes/telegram-server.ts), which
 * the plugin's grammy client talks to through `api_root`, and deliveries as Telegram makes them, a
 * JSON Update POSTed to the webhook the daemon registered, with the secret header.
 */
import { randomBytes } from "node:crypto";
import { type FakeTelegram, startFakeTelegram, textUpdate } from "../../fakes/telegram-server.js";
import type { ChannelDriver } from "./driver.js";

/** Telegram ids are integers; the suite's symbolic names (chats like `-100round`) stay strings. */
const asId = (id: string): number | string => (/^-?\d{1,15}$/.test(id) ? Number(id) : id);

export function createDriver(): ChannelDriver {
  let telegram: FakeTelegram | undefined;
  const updateIds = new Map<string, number>();
  let nextUpdateId = 1000;
  const fake = () => {
    if (!telegram) throw new Error("the Telegram driver was not started");
    return telegram;
  };

  /** The update id for a delivery: the same for the same `id` (a replay), a fresh one otherwise. */
  function updateId(id: string | undefined): number {
    if (id === undefined) return nextUpdateId++;
    let known = updateIds.get(id);
    if (known === undefined) {
      known = nextUpdateId++;
      updateIds.set(id, known);
    }
    return known;
  }

  return {
    platform: "telegram",
    limit: 4096,
    signed: true,
    async start({ allowed, fighter }) {
      telegram = await startFakeTelegram();
      const toml =
        `[channels.telegram]\nallowlist = [${allowed}]\nfighter = "${fighter}"\n` +
        `api_root = "${telegram.url}"\n`;
      const env = {
        TELEGRAM_BOT_TOKEN: telegram.token,
        TELEGRAM_WEBHOOK_SECRET: randomBytes(24).toString("base64url"),
      };
      return { toml, env };
    },
    async ready() {
      for (let i = 0; i < 400 && !fake().webhook(); i++) await new Promise((r) => setTimeout(r, 50));
      if (!fake().webhook()) throw new Error("the daemon never called setWebhook");
    },
    deliver({ sender, chat, text, id, forge }) {
      const update = textUpdate({ update_id: updateId(id), from: asId(sender), chat: asId(chat), text });
      return fake().deliver(update, forge ? { secret: "forged_secret_of_someone_else" } : {});
    },
    posted: () =>
      fake()
        .sent()
        .map((m) => ({ chat: m.chat_id, text: m.text })),
    typing: () => fake().chatActions(),
    registeredUrl: () => telegram?.webhook()?.url,
    async close() {
      await telegram?.close();
    },
  };
}
