/**
 * The Discord channel beyond the shared contract: the fake Discord driven by discord.js itself (so
 * the fake is known to speak what the library speaks); then, through the real daemon, the slash
 * commands on the HTTP interactions endpoint (a signed `/ask` answered with a deferred response and
 * the reply posted as follow-ups, PING, a stranger refused with 403, a replay processed once, a
 * forgery refused with 401), the gateway's own cases (bots ignored, DMs, mentions), channel_notify,
 * the status, a clean stop; and the set-up failures (a missing secret, a refused token).
 */
import { Client, Events, GatewayIntentBits, Partials } from "discord.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeDiscord, startFakeDiscord } from "../fakes/discord-server.js";
import { DISCORD_EPOCH } from "../fakes/discord-wire.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  allowUnasked,
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";

const ALLOWED = "300000000000000001";
const STRANGER = "300000000000000009";

/** Waits until `test` holds, polling (no timing is asserted). */
async function until<T>(probe: () => T, test: (value: T) => boolean, what: string): Promise<T> {
  for (let i = 0; i < 200; i++) {
    const value = probe();
    if (test(value)) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** `until` for a probe that must be awaited. */
async function untilAsync<T>(probe: () => Promise<T>, test: (value: T) => boolean, what: string): Promise<T> {
  for (let i = 0; i < 200; i++) {
    const value = await probe();
    if (test(value)) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe("the fake Discord, with discord.js itself", () => {
  let discord: FakeDiscord;
  let client: Client;

  beforeAll(async () => {
    discord = await startFakeDiscord();
    client = new Client({
      intents: [
        GatewayIntentBits.Guilds,
        GatewayIntentBits.GuildMessages,
        GatewayIntentBits.MessageContent,
        GatewayIntentBits.DirectMessages,
      ],
      partials: [Partials.Channel],
      rest: { api: `${discord.url}/api` },
    });
  });

  afterAll(async () => {
    await client?.destroy();
    await discord?.close();
  });

  it("lets the client log in through GET /gateway/bot, IDENTIFY, READY and GUILD_CREATE", async () => {
    const ready = new Promise((done) => client.once(Events.ClientReady, done));
    await client.login(discord.token);
    await ready;
    expect(client.user?.id).toBe(discord.botId);
    expect(client.application?.id).toBe(discord.applicationId);
    expect(client.guilds.cache.has(discord.guildId)).toBe(true);
    expect(discord.identified()?.intents).toBe(1 | 512 | 4096 | 32768);
  });

  it("delivers guild and DM messages as messageCreate, and takes typing and replies", async () => {
    const seen: { channel: string; author: string; content: string; dm: boolean }[] = [];
    client.on(Events.MessageCreate, (m) =>
      seen.push({ channel: m.channelId, author: m.author.id, content: m.content, dm: m.guildId === null }),
    );
    const room = discord.snowflake();
    const dm = discord.snowflake();
    await discord.message({ channel: room, author: "300000000000000001", content: "in a room" });
    await discord.message({ channel: dm, author: "300000000000000002", content: "in private", dm: true });
    await until(
      () => seen,
      (s) => s.length === 2,
      "both messages",
    );
    expect(seen).toEqual([
      { channel: room, author: "300000000000000001", content: "in a room", dm: false },
      { channel: dm, author: "300000000000000002", content: "in private", dm: true },
    ]);
    for (const id of [room, dm]) {
      const channel = await client.channels.fetch(id);
      if (!channel?.isSendable()) throw new Error(`channel ${id} is not sendable`);
      await channel.sendTyping();
      await channel.send("pong");
    }
    expect(discord.typing()).toEqual([room, dm]);
    expect(discord.posts().map((p) => [p.channel, p.content, p.via])).toEqual([
      [room, "pong", "channel"],
      [dm, "pong", "channel"],
    ]);
    const general = await client.channels.fetch(discord.generalChannel);
    expect(general?.isSendable()).toBe(true);
  });

  it("refuses a message over 2,000 characters as Discord does", async () => {
    const channel = await client.channels.fetch(discord.generalChannel);
    if (!channel?.isSendable()) throw new Error("general is not sendable");
    await expect(channel.send("x".repeat(2001))).rejects.toThrow(/2000 or fewer/);
  });
});

/** A daemon with `[channels.discord]` against `discord`, a manual tunnel pointing at its webhook listener. */
async function discordDaemon(
  discord: FakeDiscord,
  llm: FakeOpenAI,
  env: Record<string, string> = { DISCORD_BOT_TOKEN: discord.token, DISCORD_PUBLIC_KEY: discord.publicKey },
) {
  const home = tempHome();
  const port = await freePort();
  const webhookPort = await freePort();
  writeConfig(
    home,
    port,
    llm.url,
    `\n[creed]\nreflect = false\n\n[channels]\nwebhook_listen = "127.0.0.1:${webhookPort}"\n\n` +
      `[channels.discord]\nallowlist = ["${ALLOWED}"]\napi_root = "${discord.url}"\n\n` +
      `[tunnel]\nmode = "manual"\nurl = "http://127.0.0.1:${webhookPort}"\n` +
      // channel_notify to a chat it never posted to asks first; this suite tests the channel.
      allowUnasked(["channel_notify"]),
  );
  return { home, webhookPort, start: () => startDaemon(home, port, env) };
}

describe("Discord through the daemon: slash commands, the gateway, notify, status", () => {
  let discord: FakeDiscord;
  let llm: FakeOpenAI;
  let daemon: TestDaemon;
  let home: string;
  let endpoint: string;
  const calls = () => llm.calls().length;
  const followups = (channel: string) =>
    discord
      .posts()
      .filter((p) => p.via === "followup" && p.channel === channel)
      .map((p) => p.content);

  beforeAll(async () => {
    discord = await startFakeDiscord();
    llm = await startFakeOpenAI();
    const setup = await discordDaemon(discord, llm);
    home = setup.home;
    daemon = await setup.start();
    endpoint = await discord.endpointSet();
    await discord.sessionReady();
    expect(endpoint).toBe(`http://127.0.0.1:${setup.webhookPort}/discord/interactions`);
  }, 60_000);

  afterAll(async () => {
    await daemon?.stop();
    await discord?.close();
    await llm?.close();
    if (home) removeHome(home);
  });

  it("registers /ask with its prompt option once Discord has checked the endpoint (signed PING, forged PING)", async () => {
    await until(discord.commands, (c) => c !== undefined, "the commands");
    expect(discord.commands()).toEqual([
      expect.objectContaining({
        name: "ask",
        type: 1,
        options: [expect.objectContaining({ type: 3, name: "prompt", required: true })],
      }),
    ]);
    expect(discord.identified()?.intents).toBe(1 | 512 | 4096 | 32768);
  });

  it("answers PING with PONG and no model call", async () => {
    const before = calls();
    const ping = {
      id: discord.snowflake(),
      application_id: discord.applicationId,
      type: 1,
      token: "t0k3n",
      version: 1,
    };
    expect(await discord.interact(endpoint, ping)).toEqual({ status: 200, body: { type: 1 } });
    expect(calls()).toBe(before);
  });

  it("defers an allowed /ask at once, then posts the fighter's reply as the interaction's follow-up", async () => {
    const channel = discord.snowflake();
    const typing = discord.typing().length;
    const answer = await discord.interact(
      endpoint,
      discord.ask({ user: ALLOWED, channel, prompt: "hello by slash" }),
    );
    expect(answer).toEqual({ status: 200, body: { type: 5 } });
    await until(
      () => followups(channel),
      (f) => f.length > 0,
      "the follow-up",
    );
    expect(followups(channel)).toEqual(["echo: hello by slash"]);
    const sent = discord.calls.find((c) => c.route.startsWith(`/webhooks/${discord.applicationId}/`));
    expect(sent).toMatchObject({ method: "POST", authorized: false });
    // The deferred answer shows "thinking…": no typing is sent for a slash command.
    expect(discord.typing().length).toBe(typing);
    const relationships = await daemon.request<{ relationships: { with: string }[] }>(
      "GET",
      "/api/v1/fighters/spar/relationships",
    );
    expect(relationships.body.relationships.map((r) => r.with)).toContain(`discord:${ALLOWED}`);
  });

  it("answers /ask in a DM (the user given directly, not as a guild member)", async () => {
    const channel = discord.snowflake();
    const answer = await discord.interact(
      endpoint,
      discord.ask({ user: ALLOWED, channel, prompt: "privately", dm: true }),
    );
    expect(answer.status).toBe(200);
    await until(
      () => followups(channel),
      (f) => f.length > 0,
      "the follow-up",
    );
    expect(followups(channel)).toEqual(["echo: privately"]);
  });

  it("splits a long reply into follow-ups of at most 2,000 characters, losing nothing", async () => {
    const channel = discord.snowflake();
    const long = Array.from({ length: 700 }, (_, i) => `word${i}`).join(" ");
    llm.enqueue({ text: long });
    await discord.interact(endpoint, discord.ask({ user: ALLOWED, channel, prompt: "tell me everything" }));
    const parts = await until(
      () => followups(channel),
      (f) => f.join(" ").length >= long.length,
      "every part",
    );
    expect(parts.length).toBeGreaterThanOrEqual(3);
    for (const part of parts) expect(part.length).toBeLessThanOrEqual(2000);
    expect(parts.join(" ")).toBe(long);
  });

  it("continues the channel's conversation: a slash command sees the channel's plain messages", async () => {
    const channel = discord.snowflake();
    const posted = discord.posts().length;
    await discord.message({ channel, author: ALLOWED, content: "my plan is the red door" });
    await until(discord.posts, (p) => p.length > posted, "the gateway reply");
    await discord.interact(endpoint, discord.ask({ user: ALLOWED, channel, prompt: "which door?" }));
    await until(
      () => followups(channel),
      (f) => f.length > 0,
      "the follow-up",
    );
    const last =
      llm.requests
        .at(-1)
        ?.body?.messages.map((m) => JSON.stringify(m.content))
        .join("\n") ?? "";
    expect(last).toContain("my plan is the red door");
    expect(last).toContain("which door?");
  });

  it("refuses a stranger's /ask with 403: no model call, no follow-up", async () => {
    const [before, channel] = [calls(), discord.snowflake()];
    const answer = await discord.interact(
      endpoint,
      discord.ask({ user: STRANGER, channel, prompt: "let me in" }),
    );
    expect(answer.status).toBe(403);
    expect(answer.body).toMatchObject({ error: { code: "FORBIDDEN" } });
    // A later allowed /ask is answered, so the stranger's would have been by now.
    const after = discord.snowflake();
    await discord.interact(endpoint, discord.ask({ user: ALLOWED, channel: after, prompt: "still there?" }));
    await until(
      () => followups(after),
      (f) => f.length > 0,
      "the allowed follow-up",
    );
    expect(calls()).toBe(before + 1);
    expect(followups(channel)).toEqual([]);
    expect(llm.calls().some((c) => c.last_user_text.includes("let me in"))).toBe(false);
  });

  it("processes a replayed interaction once: the copy gets a note only its user sees", async () => {
    const [before, channel] = [calls(), discord.snowflake()];
    const ask = discord.ask({ user: ALLOWED, channel, prompt: "only once please" });
    expect((await discord.interact(endpoint, ask)).body).toEqual({ type: 5 });
    await until(
      () => followups(channel),
      (f) => f.length > 0,
      "the first follow-up",
    );
    const again = await discord.interact(endpoint, ask);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ type: 4, data: { flags: 64 } });
    const next = discord.snowflake();
    await discord.interact(endpoint, discord.ask({ user: ALLOWED, channel: next, prompt: "next" }));
    await until(
      () => followups(next),
      (f) => f.length > 0,
      "the next follow-up",
    );
    expect(calls()).toBe(before + 2);
    expect(followups(channel)).toHaveLength(1);
  });

  it("refuses a stale interaction (made over 15 minutes ago, or signed over 5 minutes ago) with 401: no model call", async () => {
    const [before, channel] = [calls(), discord.snowflake()];
    // A snowflake's top bits are its creation time: this interaction was made 20 minutes ago.
    const made = BigInt(Date.now() - 20 * 60_000) - DISCORD_EPOCH;
    const old = discord.ask({
      user: ALLOWED,
      channel,
      prompt: "stale order",
      id: String((made << 22n) | 7n),
    });
    const refused = await discord.interact(endpoint, old);
    expect(refused.status).toBe(401);
    expect(refused.body).toMatchObject({ error: { code: "UNAUTHORIZED" } });
    // A fresh interaction, genuinely signed, but at a time 10 minutes past: a captured delivery replayed.
    const late = discord.ask({ user: ALLOWED, channel, prompt: "late order" });
    const signedLate = await discord.interact(endpoint, late, {
      signedAt: Math.floor(Date.now() / 1000) - 600,
    });
    expect(signedLate.status).toBe(401);
    const next = discord.snowflake();
    await discord.interact(endpoint, discord.ask({ user: ALLOWED, channel: next, prompt: "fresh" }));
    await until(
      () => followups(next),
      (f) => f.length > 0,
      "the fresh follow-up",
    );
    expect(calls()).toBe(before + 1);
    expect(followups(channel)).toEqual([]);
    expect(daemon.output()).toContain("discord: interaction refused: older than its window");
  });

  it("refuses a forged interaction with 401: no model call, no follow-up, counted", async () => {
    const [before, channel] = [calls(), discord.snowflake()];
    const forged = await discord.interact(
      endpoint,
      discord.ask({ user: ALLOWED, channel, prompt: "forged order" }),
      { forge: true },
    );
    expect(forged.status).toBe(401);
    const next = discord.snowflake();
    await discord.interact(endpoint, discord.ask({ user: ALLOWED, channel: next, prompt: "genuine" }));
    await until(
      () => followups(next),
      (f) => f.length > 0,
      "the genuine follow-up",
    );
    expect(calls()).toBe(before + 1);
    expect(followups(channel)).toEqual([]);
    expect(daemon.output()).toContain("webhook refused: bad or missing signature");
  });

  it("on the gateway: ignores bots, answers DMs, and leaves out a mention of the bot", async () => {
    const [before, room, dm] = [calls(), discord.snowflake(), discord.snowflake()];
    await discord.message({ channel: room, author: "300000000000000077", content: "beep", bot: true });
    await discord.message({ channel: room, author: discord.botId, content: "echo: my own words", bot: true });
    await discord.message({
      channel: dm,
      author: ALLOWED,
      content: `<@${discord.botId}> in private`,
      dm: true,
    });
    const reply = await until(
      () => discord.posts().filter((p) => p.channel === dm),
      (p) => p.length > 0,
      "the DM reply",
    );
    expect(reply.map((p) => p.content)).toEqual(["echo: in private"]);
    expect(discord.posts().some((p) => p.channel === room)).toBe(false);
    expect(calls()).toBe(before + 1);
  });

  it("lets a fighter holding channel_notify post to a channel by its id", async () => {
    const manifest = { name: "herald", description: "herald", system_prompt: "You are herald." };
    const capabilities = [
      {
        type: "channel_notify",
        scope: "discord",
        targets: [`discord:${discord.generalChannel}`, "discord:general"],
      },
    ];
    const spawned = await daemon.request("POST", "/api/v1/fighters", {
      manifest: { ...manifest, capabilities },
    });
    expect(spawned.status).toBe(201);
    const call = {
      name: "channel_notify",
      arguments: { chat: discord.generalChannel, text: "the build is green" },
    };
    llm.enqueue({ tool_calls: [call] });
    const told = await daemon.request("POST", "/api/v1/fighters/herald/message", { message: "announce it" });
    expect(told.status).toBe(200);
    expect(discord.posts()).toContainEqual(
      expect.objectContaining({
        channel: discord.generalChannel,
        content: "the build is green",
        via: "channel",
      }),
    );
    llm.enqueue({ tool_calls: [{ ...call, arguments: { chat: "general", text: "by name" } }] });
    await daemon.request("POST", "/api/v1/fighters/herald/message", { message: "announce it by name" });
    expect(llm.calls().at(-1)?.tool_results.at(-1)).toContain("is not a Discord channel id");
  });

  it("reports both paths in its status", async () => {
    const res = await daemon.request<Record<string, unknown>>("GET", "/api/v1/channels/discord");
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      platform: "discord",
      mode: "gateway",
      connected: true,
      webhook_url: endpoint,
      fighter: "spar",
      allowlist_size: 1,
    });
    expect(res.body.error).toBeUndefined();
    const refused = res.body.refused as { signature: number; allowlist: number };
    // Discord's own check of the endpoint sent one forgery; the test another.
    expect(refused.signature).toBeGreaterThanOrEqual(2);
    expect(refused.allowlist).toBeGreaterThanOrEqual(1);
    expect(JSON.stringify(res.body)).not.toContain(discord.token);
  });

  it("closes the gateway cleanly when the daemon stops", async () => {
    expect(await daemon.stop()).toBe(0);
    expect(discord.closes()).toEqual([1000]);
  });
});

describe("Discord set-up failures", () => {
  let discord: FakeDiscord;
  let llm: FakeOpenAI;
  const homes: string[] = [];

  beforeAll(async () => {
    discord = await startFakeDiscord();
    llm = await startFakeOpenAI();
  });

  afterAll(async () => {
    await discord?.close();
    await llm?.close();
    for (const home of homes) removeHome(home);
  });

  it("stops the daemon at start when the public key is missing, naming the variable", async () => {
    const setup = await discordDaemon(discord, llm, { DISCORD_BOT_TOKEN: discord.token });
    homes.push(setup.home);
    const failed = await setup.start().then(
      () => undefined,
      (err: Error) => err.message,
    );
    expect(failed).toContain("CONFIG_INVALID");
    expect(failed).toContain("DISCORD_PUBLIC_KEY");
    expect(failed).toContain("spar channel setup discord");
    expect(failed).not.toContain(discord.token);
  });

  it("keeps the daemon up with a token Discord refuses, and says so in the status", async () => {
    const wrong = `${discord.token}x`;
    const setup = await discordDaemon(discord, llm, {
      DISCORD_BOT_TOKEN: wrong,
      DISCORD_PUBLIC_KEY: discord.publicKey,
    });
    homes.push(setup.home);
    const daemon = await setup.start();
    try {
      const body = await untilAsync(
        async () =>
          (await daemon.request<{ connected: boolean; error?: string }>("GET", "/api/v1/channels/discord"))
            .body,
        (b) => Boolean(b.error?.includes("Discord refused") && b.error.includes("registering")),
        "both failures in the status",
      );
      expect(body.connected).toBe(false);
      expect(body.error).toContain("Discord refused the bot token");
      expect(body.error).toContain("registering the interactions endpoint failed");
      expect(body.error).not.toContain(wrong);
      expect((await daemon.request("GET", "/api/v1/status")).status).toBe(200);
    } finally {
      expect(await daemon.stop()).toBe(0);
    }
  });
});
