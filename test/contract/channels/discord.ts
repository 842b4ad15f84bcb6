/**
 * The channel contract's Discord driver: the fake Discord (REST, gateway, signed interactions) that
 * the plugin's discord.js talks to. Plain messages go through the gateway (MESSAGE_CREATE: no HTTP
 * answer exists, so `deliver` returns undefined); a forgery can only be tried on the interactions
 * endpoint, so `forge` POSTs an `/ask` with a bad signature there and returns its status.
 *
 * The suite names chats and deliveries with letters ("Cround", "replay-1"); Discord ids are
 * snowflakes, so each name is given one, the same every time it is used.
 */
import { type FakeDiscord, startFakeDiscord } from "../../fakes/discord-server.js";
import type { ChannelDriver } from "./driver.js";

export function createDriver(): ChannelDriver {
  let discord: FakeDiscord | undefined;
  const ids = new Map<string, string>();
  const fake = () => {
    if (!discord) throw new Error("the fake Discord is not started");
    return discord;
  };
  /** The snowflake standing for `name` (a snowflake stands for itself). */
  const idOf = (name: string) => {
    if (/^\d{17,20}$/.test(name)) return name;
    const known = ids.get(name);
    if (known) return known;
    const id = fake().snowflake();
    ids.set(name, id);
    return id;
  };
  const nameOf = (id: string) => [...ids].find(([, value]) => value === id)?.[0] ?? id;

  return {
    platform: "discord",
    limit: 2000,
    signed: true,
    async start({ allowed, fighter }) {
      discord = await startFakeDiscord();
      return {
        toml: `[channels.discord]\nallowlist = ["${allowed}"]\nfighter = "${fighter}"\napi_root = "${discord.url}"\n`,
        env: { DISCORD_BOT_TOKEN: discord.token, DISCORD_PUBLIC_KEY: discord.publicKey },
      };
    },
    async ready() {
      await Promise.all([fake().sessionReady(), fake().endpointSet()]);
    },
    async deliver({ sender, chat, text, id, forge }) {
      if (forge) {
        const url = fake().interactionsEndpoint();
        if (!url) throw new Error("no interactions endpoint is registered");
        const ask = fake().ask({
          user: sender,
          channel: idOf(chat),
          prompt: text,
          ...(id ? { id: idOf(id) } : {}),
        });
        return (await fake().interact(url, ask, { forge: true })).status;
      }
      await fake().message({
        channel: idOf(chat),
        author: sender,
        content: text,
        ...(id ? { id: idOf(`message:${id}`) } : {}),
      });
      return undefined;
    },
    chat: (name) => fake().channel(idOf(name)),
    posted: () =>
      fake()
        .posts()
        .map((p) => ({ chat: nameOf(p.channel), text: p.content })),
    typing: () => fake().typing().length,
    registeredUrl: () => fake().interactionsEndpoint(),
    async close() {
      await discord?.close();
    },
  };
}
