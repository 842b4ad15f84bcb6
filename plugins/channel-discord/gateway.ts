/**
 * The bot's gateway connection (discord.js): plain messages in the channels and DMs the bot can read
 * arrive here as `messageCreate`, and replies go back as channel messages with typing shown. Only
 * people's messages are passed on (never a bot's, the bot's own included, nor a webhook's). Discord
 * keeps the connection, so nothing here needs the tunnel.
 */
import { Client, Events, GatewayIntentBits, type Message, Partials } from "discord.js";
import { type Logger, SparError } from "../../sdk/index.js";
import type { PlatformIo } from "../../sdk/kits/channels.js";

/** Discord's longest message content. */
export const DISCORD_LIMIT = 2000;

/** A person's message, as the channel's gate and relay take it. */
export interface GatewayMessage {
  /** The message's id: a redelivery has the same. */
  id: string;
  chat: string;
  sender: string;
  text: string;
}

export interface DiscordGateway {
  /** Typing and posting in a channel, for the relay. */
  readonly io: PlatformIo;
  /** Connects (REST `GET /gateway/bot`, then the WebSocket); resolves on READY, rejects with a readable reason. */
  login(): Promise<void>;
  /** READY received and every guild loaded. */
  connected(): boolean;
  /** Why the gateway is down, when it is. */
  error(): string | undefined;
  destroy(): Promise<void>;
}

/** What to tell the operator about a refusal Discord gives at login or as a close code. */
function explain(reason: string): string {
  if (/4004|invalid token|authentication failed/i.test(reason)) {
    return "Discord refused the bot token: copy a new one from the Developer Portal (Bot → Reset Token) and run: spar channel setup discord";
  }
  if (/4014|disallowed intents/i.test(reason)) {
    return "Discord refused the Message Content intent: turn on Message Content Intent in the Developer Portal (Bot → Privileged Gateway Intents), then restart";
  }
  return `the Discord gateway failed: ${reason}`;
}

export function createGateway(options: {
  token: string;
  /** discord.js's REST base: `<api_root>/api`. */
  api: string;
  log: Logger;
  onMessage(message: GatewayMessage): void;
}): DiscordGateway {
  const { log } = options;
  const client = new Client({
    intents: [
      GatewayIntentBits.Guilds,
      GatewayIntentBits.GuildMessages,
      GatewayIntentBits.MessageContent,
      GatewayIntentBits.DirectMessages,
    ],
    // DM channels are not announced before their first message: a partial one is made from it.
    partials: [Partials.Channel],
    // A fighter's reply never pings @everyone, a role or a user.
    allowedMentions: { parse: [] },
    rest: { api: options.api },
  });
  let problem: string | undefined;

  client.on(Events.ClientReady, (ready) => {
    problem = undefined;
    log.info("discord gateway ready", { bot: ready.user.tag, guilds: ready.guilds.cache.size });
  });
  client.on(Events.ShardDisconnect, (event) => {
    problem = explain(`the connection closed with code ${event.code} and will not reconnect`);
    log.error("discord gateway closed for good", { code: event.code });
  });
  client.on(Events.ShardReconnecting, () => log.info("discord gateway reconnecting"));
  client.on(Events.ShardResume, () => {
    problem = undefined;
  });
  // Without a listener an 'error' event would throw and take the daemon down.
  client.on(Events.Error, (err) => log.error("discord client error", { error: String(err) }));
  client.on(Events.ShardError, (err) => log.warn("discord gateway error", { error: String(err) }));
  client.on(Events.MessageCreate, (message: Message) => {
    if (message.author.bot || message.webhookId || message.system) return;
    // A mention of the bot is how one addresses it in a busy channel: it is not part of the question.
    const bot = client.user?.id;
    const text = (
      bot ? message.content.replace(new RegExp(`<@!?${bot}>`, "g"), " ") : message.content
    ).trim();
    if (text === "") return;
    options.onMessage({ id: message.id, chat: message.channelId, sender: message.author.id, text });
  });

  async function sendable(chat: string) {
    if (!client.isReady()) {
      throw new SparError(
        "CONFLICT",
        "the Discord gateway is not connected (see: spar channel status discord)",
      );
    }
    const channel = await client.channels.fetch(chat);
    if (!channel?.isSendable()) {
      throw new SparError("VALIDATION_FAILED", `the bot cannot post in the Discord channel ${chat}`);
    }
    return channel;
  }

  return {
    io: {
      limit: DISCORD_LIMIT,
      async typing(chat) {
        await (await sendable(chat)).sendTyping();
      },
      async post(chat, text) {
        return (await (await sendable(chat)).send(text)).id;
      },
    },
    async login() {
      try {
        await client.login(options.token);
      } catch (err) {
        problem = explain(err instanceof Error ? err.message : String(err));
        throw new Error(problem, { cause: err });
      }
    },
    connected: () => client.isReady(),
    error: () => problem,
    destroy: () => client.destroy(),
  };
}
