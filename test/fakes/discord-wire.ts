// Discord's wire shapes for the fake (discord-server.ts): the objects it sends, its limits and
// errors, and what a test can read back from it.
import type { ServerResponse } from "node:http";
import { sendJson } from "./http-fake.js";

/** Discord's longest message content. */
export const DISCORD_CONTENT_LIMIT = 2000;

/** Discord's epoch (2015-01-01) in Unix milliseconds: snowflakes count from it. */
export const DISCORD_EPOCH = 1_420_070_400_000n;

/** A message the bot posted: to a channel, or as an interaction's follow-up. */
export interface FakePost {
  /** The message's id (what `PATCH /channels/:id/messages/:id` names). */
  id: string;
  channel: string;
  /** The content, as posted or as edited since. */
  content: string;
  via: "channel" | "followup";
  /** The JSON body as sent. */
  body: Record<string, unknown>;
}

/** One REST call the fake answered. */
export interface FakeRestCall {
  method: string;
  /** The route after `/api/v10`, without the query. */
  route: string;
  /** Whether it carried the bot's token. */
  authorized: boolean;
  body: Record<string, unknown> | unknown[] | undefined;
}

export interface FakeDiscord {
  /** `http://127.0.0.1:<port>`: the API root (`[channels.discord] api_root`; discord.js wants `${url}/api`). */
  readonly url: string;
  /** The gateway's URL, as `GET /gateway/bot` gives it. */
  readonly gatewayUrl: string;
  /** The only bot token the fake accepts. */
  readonly token: string;
  /** The application's Ed25519 public key, 64 hex characters (the Developer Portal's "Public Key"). */
  readonly publicKey: string;
  readonly applicationId: string;
  /** The bot's user id (Discord gives the bot its application's id). */
  readonly botId: string;
  /** The guild the bot is in. */
  readonly guildId: string;
  /** A text channel of that guild, there from the start ("general"). */
  readonly generalChannel: string;
  readonly calls: FakeRestCall[];
  /** Messages posted, in order. */
  posts(): FakePost[];
  /** Channels typing was shown in, one entry a call. */
  typing(): string[];
  /** The commands as the last `PUT /applications/:id/commands` left them. */
  commands(): Record<string, unknown>[] | undefined;
  /** The interactions endpoint URL the application has (set by `PATCH /applications/@me`). */
  interactionsEndpoint(): string | undefined;
  /** The close codes of the gateway connections the client ended (1000: a clean goodbye). */
  closes(): number[];
  /** The last IDENTIFY payload's `d`. */
  identified(): Record<string, unknown> | undefined;
  /** Resolves once a session was identified and READY and GUILD_CREATE were dispatched to it. */
  sessionReady(): Promise<void>;
  /** Resolves once an interactions endpoint URL is set. */
  endpointSet(): Promise<string>;
  /** A new snowflake (ids of channels, messages, users). */
  snowflake(): string;
  /** A text channel of the guild with this id (new unless given), shown to the bot; returns its id. */
  channel(id?: string): string;
  /**
   * Dispatches MESSAGE_CREATE as `author` (a bot's account with `bot`) in `channel` (a guild text
   * channel, or a DM with `dm`); `id` reuses a message id (a redelivery). Returns the message id.
   */
  message(options: {
    channel: string;
    author: string;
    content: string;
    id?: string;
    dm?: boolean;
    bot?: boolean;
  }): Promise<string>;
  /**
   * A button press (MESSAGE_COMPONENT, type 3) from `user` on the posted `message`, the button named
   * by its `custom_id` (as the message's components hold it).
   */
  button(options: { user: string; message: FakePost; custom_id: string }): Record<string, unknown>;
  /** An `ask` slash command interaction from `user` in `channel` (its token then takes follow-ups). */
  ask(options: {
    user: string;
    channel: string;
    prompt: string;
    id?: string;
    dm?: boolean;
  }): Record<string, unknown>;
  /**
   * POSTs an interaction to `url`, signed with the application's key, or with a bad signature when
   * `forge`; signed at `signedAt` (unix seconds; default now), as a replay of an old delivery is.
   */
  interact(
    url: string,
    body: unknown,
    options?: { forge?: boolean; signedAt?: number },
  ): Promise<{ status: number; body: unknown }>;
  close(): Promise<void>;
}

export const HEARTBEAT_INTERVAL_MS = 41_250;

/** A user object as Discord sends it. */
export function user(id: string, bot = false): Record<string, unknown> {
  return {
    id,
    username: `${bot ? "bot" : "user"}${id.slice(-4)}`,
    discriminator: "0",
    global_name: bot ? null : `User ${id.slice(-4)}`,
    avatar: null,
    public_flags: 0,
    ...(bot ? { bot: true } : {}),
  };
}

export function timestampOf(snowflake: string): string {
  return new Date(Number((BigInt(snowflake) >> 22n) + DISCORD_EPOCH)).toISOString();
}

/** Discord's 400 for a body that fails validation, naming the field. */
export function invalidForm(res: ServerResponse, field: string, code: string, message: string): void {
  sendJson(res, 400, {
    message: "Invalid Form Body",
    code: 50035,
    errors: { [field]: { _errors: [{ code, message }] } },
  });
}

/** A message object as Discord sends it; `guild` for a guild channel's. */
export function messageObject(
  id: string,
  channel: string,
  guild: unknown,
  author: Record<string, unknown>,
  content: string,
) {
  return {
    id,
    channel_id: channel,
    ...(guild ? { guild_id: guild } : {}),
    author,
    content,
    timestamp: timestampOf(id),
    edited_timestamp: null,
    tts: false,
    mention_everyone: false,
    mentions: [],
    mention_roles: [],
    attachments: [],
    embeds: [],
    pinned: false,
    type: 0,
    flags: 0,
    components: [],
  };
}
