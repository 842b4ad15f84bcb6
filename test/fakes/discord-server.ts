// A stand-in for Discord on 127.0.0.1, speaking its wire protocols as discord.js 14 uses them, so the
// real library runs against it with only its REST base URL changed (`rest: { api: `${fake.url}/api` }`).
//
// REST (`/api/v10/…`, `Authorization: Bot <token>`, else 401): `GET /gateway/bot` (points discord.js
// at the fake's gateway), `GET /users/@me`, `GET|PATCH /applications/@me` (a new
// `interactions_endpoint_url` is validated as Discord does: a signed PING must get `{type: 1}` and a
// forged one 401, else 400 "Invalid Form Body"), `PUT /applications/:id/commands`,
// `POST /channels/:id/messages` (2,000 characters at most, as Discord; components kept),
// `PATCH /channels/:id/messages/:id` (edits content and components), `POST /channels/:id/typing`,
// `GET /channels/:id`, and the interaction follow-up webhook `POST /webhooks/:app/:token` (no
// authorization: the interaction's token is the credential).
//
// Gateway (a WebSocket on its own port, JSON, no compression): HELLO, IDENTIFY (a wrong token closes
// with 4004), heartbeats acknowledged, then READY (the guild unavailable) and GUILD_CREATE, as
// Discord does. `message()` dispatches MESSAGE_CREATE (after CHANNEL_CREATE for a channel it has not
// shown yet) with increasing sequence numbers.
//
// Interactions: the application has an Ed25519 key pair; `interact()` POSTs an interaction to a URL
// signed with it (or forged) as Discord signs them, and `ask()` builds an `ask` slash command.
//
//   const discord = await startFakeDiscord();
//   const client = new Client({ intents: [GatewayIntentBits.Guilds], rest: { api: `${discord.url}/api` } });
//   await client.login(discord.token);
//   await discord.message({ channel: discord.snowflake(), author: "300000000000000001", content: "hi" });
import { generateKeyPairSync, randomBytes, sign } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { type WebSocket, WebSocketServer } from "ws";
import {
  DISCORD_CONTENT_LIMIT,
  DISCORD_EPOCH,
  type FakeDiscord,
  type FakePost,
  type FakeRestCall,
  HEARTBEAT_INTERVAL_MS,
  invalidForm,
  messageObject,
  user,
} from "./discord-wire.js";
import { parseJsonObject, sendJson, startFakeHttp } from "./http-fake.js";

export type { FakeDiscord, FakePost, FakeRestCall } from "./discord-wire.js";

export async function startFakeDiscord(): Promise<FakeDiscord> {
  const token = `MTA.fake.${randomBytes(18).toString("base64url")}`;
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  const publicKeyHex = publicKey.export({ format: "der", type: "spki" }).subarray(-32).toString("hex");
  let increment = 0n;
  const snowflake = () => {
    increment = (increment + 1n) & 0x3fffffn;
    return String(((BigInt(Date.now()) - DISCORD_EPOCH) << 22n) | increment);
  };
  const applicationId = snowflake();
  const guildId = snowflake();
  const generalChannel = snowflake();
  const bot = { ...user(applicationId, true), username: "spar-test-bot" };

  const calls: FakeRestCall[] = [];
  const posts: FakePost[] = [];
  const typing: string[] = [];
  /** Channels by id: guild text channels (`guild_id`) and DM channels (the DM channel object). */
  const channels = new Map<string, Record<string, unknown>>([
    [generalChannel, { id: generalChannel, guild_id: guildId }],
  ]);
  /** Interaction tokens Discord issued → the channel the interaction came from. */
  const interactionTokens = new Map<string, string>();
  let commands: Record<string, unknown>[] | undefined;
  let endpoint: string | undefined;
  let identify: Record<string, unknown> | undefined;
  const waiters = { session: [] as (() => void)[], endpoint: [] as ((url: string) => void)[] };

  const application = () => ({
    id: applicationId,
    name: "Spar Test",
    icon: null,
    description: "",
    bot_public: true,
    bot_require_code_grant: false,
    verify_key: publicKeyHex,
    flags: 0,
    bot,
    interactions_endpoint_url: endpoint ?? null,
  });

  const guildChannel = (id: string) => ({
    id,
    type: 0,
    guild_id: guildId,
    name: `chat-${id.slice(-6)}`,
    position: 0,
    permission_overwrites: [],
    parent_id: null,
    nsfw: false,
    topic: null,
    last_message_id: null,
    rate_limit_per_user: 0,
  });

  // ---- Gateway ----------------------------------------------------------------------------------
  const gateway = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await new Promise<void>((resolve, reject) => {
    gateway.once("listening", resolve);
    gateway.once("error", reject);
  });
  const gatewayAddress = gateway.address();
  if (gatewayAddress === null || typeof gatewayAddress === "string")
    throw new Error("the fake gateway has no TCP port");
  const gatewayUrl = `ws://127.0.0.1:${gatewayAddress.port}`;
  /** The identified connection messages are dispatched on, with its sequence number. */
  let session: { socket: WebSocket; seq: number } | undefined;
  const closes: number[] = [];
  let closing = false;
  /** Guild channels the session has been shown (GUILD_CREATE, then CHANNEL_CREATE for new ones). */
  const shown = new Set<string>();

  function dispatch(t: string, d: unknown): void {
    if (!session) throw new Error("no gateway session: the bot has not identified");
    session.seq += 1;
    session.socket.send(JSON.stringify({ op: 0, t, s: session.seq, d }));
  }

  gateway.on("connection", (socket, request) => {
    const query = new URL(request.url ?? "/", gatewayUrl).searchParams;
    if (query.get("v") !== "10" || query.get("encoding") !== "json" || query.has("compress")) {
      socket.close(4012, "Invalid API version");
      return;
    }
    socket.send(
      JSON.stringify({ op: 10, d: { heartbeat_interval: HEARTBEAT_INTERVAL_MS }, s: null, t: null }),
    );
    socket.on("message", (raw) => {
      const payload = parseJsonObject(String(raw));
      if (!payload) return socket.close(4002, "Decode error");
      switch (payload.op) {
        case 1:
          socket.send(JSON.stringify({ op: 11, d: null, s: null, t: null }));
          return;
        case 2:
          return identified(socket, payload.d as Record<string, unknown>);
        case 6:
          // Sessions are not kept across connections: the client identifies again.
          socket.send(JSON.stringify({ op: 9, d: false, s: null, t: null }));
          return;
        default:
          socket.close(4001, "Unknown opcode");
      }
    });
    socket.on("close", (code) => {
      if (session?.socket === socket) session = undefined;
      if (!closing) closes.push(code);
    });
  });

  function identified(socket: WebSocket, d: Record<string, unknown>): void {
    if (d.token !== token) {
      socket.close(4004, "Authentication failed");
      return;
    }
    identify = d;
    session = { socket, seq: 0 };
    shown.clear();
    const guildChannels = [...channels.values()].filter((c) => c.guild_id).map((c) => String(c.id));
    for (const id of guildChannels) shown.add(id);
    dispatch("READY", {
      v: 10,
      user: { ...bot, verified: true, mfa_enabled: false, flags: 0 },
      guilds: [{ id: guildId, unavailable: true }],
      session_id: randomBytes(16).toString("hex"),
      resume_gateway_url: gatewayUrl,
      shard: [0, 1],
      application: { id: applicationId, flags: 0 },
      private_channels: [],
      relationships: [],
      user_settings: {},
      presences: [],
      guild_join_requests: [],
      geo_ordered_rtc_regions: [],
    });
    dispatch("GUILD_CREATE", {
      id: guildId,
      name: "Spar Test Guild",
      icon: null,
      splash: null,
      discovery_splash: null,
      owner_id: "300000000000000000",
      afk_channel_id: null,
      afk_timeout: 300,
      verification_level: 0,
      default_message_notifications: 0,
      explicit_content_filter: 0,
      roles: [
        {
          id: guildId,
          name: "@everyone",
          color: 0,
          hoist: false,
          icon: null,
          unicode_emoji: null,
          position: 0,
          permissions: "1071698660929",
          managed: false,
          mentionable: false,
          flags: 0,
        },
      ],
      emojis: [],
      stickers: [],
      features: [],
      mfa_level: 0,
      system_channel_id: null,
      system_channel_flags: 0,
      rules_channel_id: null,
      vanity_url_code: null,
      description: null,
      banner: null,
      premium_tier: 0,
      preferred_locale: "en-US",
      public_updates_channel_id: null,
      nsfw_level: 0,
      premium_progress_bar_enabled: false,
      joined_at: new Date().toISOString(),
      large: false,
      unavailable: false,
      member_count: 2,
      voice_states: [],
      members: [
        { user: bot, roles: [], joined_at: new Date().toISOString(), deaf: false, mute: false, flags: 0 },
      ],
      channels: guildChannels.map(guildChannel),
      threads: [],
      presences: [],
      stage_instances: [],
      guild_scheduled_events: [],
      soundboard_sounds: [],
    });
    for (const wake of waiters.session.splice(0)) wake();
  }

  // ---- REST -------------------------------------------------------------------------------------
  async function validateEndpoint(url: string): Promise<boolean> {
    try {
      const ping = {
        id: snowflake(),
        application_id: applicationId,
        type: 1,
        token: randomBytes(24).toString("hex"),
        version: 1,
      };
      const genuine = await interact(url, ping);
      const forged = await interact(url, ping, { forge: true });
      return (
        genuine.status === 200 && (genuine.body as { type?: unknown })?.type === 1 && forged.status === 401
      );
    } catch {
      return false;
    }
  }

  async function rest(req: IncomingMessage, res: ServerResponse, raw: string): Promise<void> {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    if (!path.startsWith("/api/v10/")) return sendJson(res, 404, { message: "404: Not Found", code: 0 });
    const route = path.slice("/api/v10".length);
    const method = req.method ?? "GET";
    const authorized = req.headers.authorization === `Bot ${token}`;
    let body: Record<string, unknown> | unknown[] | undefined;
    try {
      body = raw ? (JSON.parse(raw) as Record<string, unknown>) : undefined;
    } catch {
      return sendJson(res, 400, { message: "400: Bad Request", code: 0 });
    }
    calls.push({ method, route, authorized, body });

    const followup = /^\/webhooks\/(\d+)\/([^/]+)$/.exec(route);
    if (method === "POST" && followup) {
      const channel = followup[1] === applicationId ? interactionTokens.get(followup[2] ?? "") : undefined;
      if (!channel) return sendJson(res, 404, { message: "Unknown Webhook", code: 10015 });
      return postMessage(res, channel, body, "followup");
    }
    if (!authorized) return sendJson(res, 401, { message: "401: Unauthorized", code: 0 });

    if (method === "GET" && route === "/gateway/bot") {
      return sendJson(res, 200, {
        url: gatewayUrl,
        shards: 1,
        session_start_limit: { total: 1000, remaining: 999, reset_after: 14_400_000, max_concurrency: 1 },
      });
    }
    if (method === "GET" && route === "/users/@me") return sendJson(res, 200, bot);
    if (method === "GET" && route === "/applications/@me") return sendJson(res, 200, application());
    if (method === "PATCH" && route === "/applications/@me") {
      const url = (body as Record<string, unknown> | undefined)?.interactions_endpoint_url;
      if (typeof url === "string") {
        if (!(await validateEndpoint(url))) {
          return invalidForm(
            res,
            "interactions_endpoint_url",
            "APPLICATION_INTERACTIONS_ENDPOINT_URL_INVALID",
            "The specified interactions endpoint url could not be verified.",
          );
        }
        endpoint = url;
        for (const wake of waiters.endpoint.splice(0)) wake(url);
      }
      return sendJson(res, 200, application());
    }
    const commandsRoute = /^\/applications\/(\d+)\/commands$/.exec(route);
    if (method === "PUT" && commandsRoute) {
      if (commandsRoute[1] !== applicationId)
        return sendJson(res, 403, { message: "Missing Access", code: 50001 });
      if (!Array.isArray(body)) return sendJson(res, 400, { message: "Invalid Form Body", code: 50035 });
      commands = body.map((command) => ({
        id: snowflake(),
        application_id: applicationId,
        version: snowflake(),
        type: 1,
        default_member_permissions: null,
        nsfw: false,
        ...(command as Record<string, unknown>),
      }));
      return sendJson(res, 200, commands);
    }
    const edit = /^\/channels\/(\d+)\/messages\/(\d+)$/.exec(route);
    if (method === "PATCH" && edit) {
      const post = posts.find((p) => p.channel === edit[1] && p.id === edit[2] && p.via === "channel");
      if (!post) return sendJson(res, 404, { message: "Unknown Message", code: 10008 });
      const patch = (body ?? {}) as Record<string, unknown>;
      if (typeof patch.content === "string") post.content = patch.content;
      post.body = { ...post.body, ...patch };
      return sendJson(
        res,
        200,
        messageObject(post.id, post.channel, channels.get(post.channel)?.guild_id, bot, post.content),
      );
    }
    const channelRoute = /^\/channels\/(\d+)(\/messages|\/typing)?$/.exec(route);
    if (channelRoute) {
      const [, id = "", sub] = channelRoute;
      const channel = channels.get(id);
      if (!channel) return sendJson(res, 404, { message: "Unknown Channel", code: 10003 });
      if (method === "GET" && !sub) {
        return sendJson(res, 200, channel.guild_id ? guildChannel(id) : channel);
      }
      if (method === "POST" && sub === "/typing") {
        typing.push(id);
        res.writeHead(204).end();
        return;
      }
      if (method === "POST" && sub === "/messages") return postMessage(res, id, body, "channel");
    }
    sendJson(res, 404, { message: "404: Not Found", code: 0 });
  }

  function postMessage(res: ServerResponse, channel: string, body: unknown, via: FakePost["via"]): void {
    const sent = (typeof body === "object" && body !== null ? body : {}) as Record<string, unknown>;
    const content = typeof sent.content === "string" ? sent.content : "";
    if (content.trim() === "") {
      sendJson(res, 400, { message: "Cannot send an empty message", code: 50006 });
    } else if (content.length > DISCORD_CONTENT_LIMIT) {
      const limit = `Must be ${DISCORD_CONTENT_LIMIT} or fewer in length.`;
      invalidForm(res, "content", "BASE_TYPE_MAX_LENGTH", limit);
    } else {
      const id = snowflake();
      posts.push({ id, channel, content, via, body: sent });
      sendJson(res, 200, messageObject(id, channel, channels.get(channel)?.guild_id, bot, content));
    }
  }

  const http = await startFakeHttp(rest);
  const url = `http://127.0.0.1:${http.port}`;

  async function interact(
    target: string,
    body: unknown,
    options: { forge?: boolean; signedAt?: number } = {},
  ) {
    const raw = JSON.stringify(body);
    const timestamp = String(options.signedAt ?? Math.floor(Date.now() / 1000));
    const signed = sign(null, Buffer.from(timestamp + raw), privateKey);
    // A forgery: a well-formed signature that is not the application's (over other bytes).
    const signature = options.forge ? sign(null, Buffer.from(`${timestamp}{}`), privateKey) : signed;
    const response = await fetch(target, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "user-agent": "Discord-Interactions/1.0 (+https://discord.com)",
        "x-signature-ed25519": signature.toString("hex"),
        "x-signature-timestamp": timestamp,
      },
      body: raw,
    });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // Not JSON: kept as text.
    }
    return { status: response.status, body: parsed };
  }

  return {
    url,
    gatewayUrl,
    token,
    publicKey: publicKeyHex,
    applicationId,
    botId: applicationId,
    guildId,
    generalChannel,
    calls,
    posts: () => posts,
    typing: () => typing,
    commands: () => commands,
    interactionsEndpoint: () => endpoint,
    closes: () => closes,
    identified: () => identify,
    sessionReady: () => (session ? Promise.resolve() : new Promise((wake) => waiters.session.push(wake))),
    endpointSet: () =>
      endpoint ? Promise.resolve(endpoint) : new Promise((wake) => waiters.endpoint.push(wake)),
    snowflake,
    channel(id = snowflake()) {
      if (!channels.has(id)) channels.set(id, { id, guild_id: guildId });
      if (!shown.has(id)) {
        shown.add(id);
        dispatch("CHANNEL_CREATE", guildChannel(id));
      }
      return id;
    },
    async message({ channel, author, content, id, dm, bot: fromBot }) {
      const messageId = id ?? snowflake();
      if (!channels.has(channel)) {
        channels.set(
          channel,
          dm
            ? { id: channel, type: 1, last_message_id: null, recipients: [user(author)] }
            : { id: channel, guild_id: guildId },
        );
      }
      if (!dm && !shown.has(channel)) {
        shown.add(channel);
        dispatch("CHANNEL_CREATE", guildChannel(channel));
      }
      const message = messageObject(
        messageId,
        channel,
        channels.get(channel)?.guild_id,
        user(author, fromBot),
        content,
      );
      const member = { roles: [], joined_at: new Date().toISOString(), deaf: false, mute: false, flags: 0 };
      // Discord names the channel's type on MESSAGE_CREATE: how a client knows a DM it has not seen.
      dispatch(
        "MESSAGE_CREATE",
        dm ? { ...message, channel_type: 1 } : { ...message, member, channel_type: 0 },
      );
      return messageId;
    },
    button({ user: from, message, custom_id }) {
      return {
        id: snowflake(),
        application_id: applicationId,
        type: 3,
        token: `aW50ZXJhY3Rpb24.${randomBytes(32).toString("base64url")}`,
        version: 1,
        data: { custom_id, component_type: 2 },
        channel_id: message.channel,
        channel: guildChannel(message.channel),
        guild_id: guildId,
        member: {
          user: user(from),
          roles: [],
          joined_at: new Date().toISOString(),
          deaf: false,
          mute: false,
        },
        message: {
          ...messageObject(message.id, message.channel, guildId, bot, message.content),
          components: message.body.components ?? [],
        },
      };
    },
    ask({ user: from, channel, prompt, id, dm }) {
      const interactionToken = `aW50ZXJhY3Rpb24.${randomBytes(32).toString("base64url")}`;
      interactionTokens.set(interactionToken, channel);
      if (!channels.has(channel)) {
        channels.set(
          channel,
          dm
            ? { id: channel, type: 1, last_message_id: null, recipients: [user(from)] }
            : { id: channel, guild_id: guildId },
        );
      }
      const command = commands?.find((c) => c.name === "ask");
      return {
        id: id ?? snowflake(),
        application_id: applicationId,
        type: 2,
        token: interactionToken,
        version: 1,
        data: {
          id: command?.id ?? snowflake(),
          name: "ask",
          type: 1,
          options: [{ type: 3, name: "prompt", value: prompt }],
        },
        channel_id: channel,
        channel: dm ? { id: channel, type: 1 } : guildChannel(channel),
        ...(dm
          ? { user: user(from), context: 1 }
          : {
              guild_id: guildId,
              member: {
                user: user(from),
                roles: [],
                joined_at: new Date().toISOString(),
                deaf: false,
                mute: false,
                flags: 0,
                permissions: "1071698660929",
              },
              context: 0,
            }),
        app_permissions: "1071698660929",
        locale: "en-US",
        entitlements: [],
        authorizing_integration_owners: { "0": guildId },
      };
    },
    interact,
    async close() {
      closing = true;
      for (const client of gateway.clients) client.terminate();
      await new Promise<void>((resolve) => gateway.close(() => resolve()));
      await http.close();
    },
  };
}
