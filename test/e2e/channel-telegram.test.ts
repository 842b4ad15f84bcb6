/**
 * What is Telegram's own beyond the shared channel contract, through the real daemon, its webhook
 * listener (a manual tunnel pointing at it) and grammy against the fake Bot API: webhook mode will
 * not start without its secret, the allowlist takes numeric ids only, the webhook is registered
 * again at every start (a quick tunnel's URL changes), a bad token is reported and does not stop the
 * daemon, updates that are not text are ignored, a sender over its rate gets 429, and
 * `channel_notify` posts to `notify_chat`.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import { type FakeTelegram, startFakeTelegram, textUpdate } from "../fakes/telegram-server.js";
import {
  allowUnasked,
  freePort,
  removeHome,
  runCli,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";

const ALLOWED = 424242;
/** Allowed too, with its own rate budget (rate_per_minute = 2 below). */
const HASTY = 515151;
/** Allowed too, and quiet until the replay test: the others have used up their rate by then. */
const CALM = 616161;
/** Allowed too: the chat that must stay apart from the local user's conversation. */
const PRIVATE = 717171;
const SECRET = randomBytes(24).toString("base64url");
const NOTIFY_CHAT = -1009876543210;

/** Waits until `test` holds for what `probe` answers, polling (no timing is asserted). */
async function eventually<T>(
  probe: () => T | Promise<T>,
  test: (value: T) => boolean,
  what: string,
): Promise<T> {
  for (let i = 0; i < 300; i++) {
    const value = await probe();
    if (test(value)) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Waits until `test()` holds. */
const until = (test: () => boolean, what: string) => eventually(test, (ok) => ok, what);

interface ChannelStatusBody {
  platform: string;
  mode: string;
  connected: boolean;
  webhook_url?: string;
  fighter: string;
  allowlist_size: number;
  inbound: number;
  outbound: number;
  refused: { signature: number; allowlist: number; rate: number };
  error?: string;
}

describe("channel-telegram", () => {
  let fake: FakeOpenAI;
  let telegram: FakeTelegram;
  const homes: string[] = [];

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    telegram = await startFakeTelegram();
  });
  afterAll(async () => {
    await telegram?.close();
    await fake?.close();
    for (const home of homes) removeHome(home);
  });

  /** A data dir whose config has a Telegram channel (plus `table` lines) behind a manual tunnel. */
  async function telegramHome(table = "", tunnelHost = "127.0.0.1") {
    const home = tempHome();
    homes.push(home);
    const port = await freePort();
    const webhookPort = await freePort();
    writeConfig(
      home,
      port,
      fake.url,
      `\n[creed]\nreflect = false\n\n[channels]\nwebhook_listen = "127.0.0.1:${webhookPort}"\n\n` +
        `[channels.telegram]\napi_root = "${telegram.url}"\n${table}\n\n` +
        `[tunnel]\nmode = "manual"\nurl = "http://${tunnelHost}:${webhookPort}"\n` +
        // channel_notify to a chat it never posted to asks first; this suite tests the channel.
        allowUnasked(["channel_notify"]),
    );
    return { home, port, webhookPort };
  }
  /** Both secrets, as the daemon reads them from its environment. */
  const secrets = (token = telegram.token) => ({
    TELEGRAM_BOT_TOKEN: token,
    TELEGRAM_WEBHOOK_SECRET: SECRET,
  });
  const setWebhooks = () => telegram.calls.filter((c) => c.method === "setWebhook" && c.authorized).length;

  it("refuses to start without the webhook secret, naming the variable and the setup command", async () => {
    const { home } = await telegramHome("allowlist = [424242]");
    const missing = await runCli(home, ["start"], { TELEGRAM_BOT_TOKEN: telegram.token });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("TELEGRAM_WEBHOOK_SECRET is not set");
    expect(missing.stderr).toContain("spar channel setup telegram");
    expect(missing.stderr).toContain("(CONFIG_INVALID)");
    const weak = await runCli(home, ["start"], {
      TELEGRAM_BOT_TOKEN: telegram.token,
      TELEGRAM_WEBHOOK_SECRET: "tooShort-123",
    });
    expect(weak.code).toBe(1);
    expect(weak.stderr).toContain("TELEGRAM_WEBHOOK_SECRET must be 16 to 256 characters long, not 12");
    expect(weak.stderr).not.toContain("tooShort-123");
  });

  it("refuses an @username in the allowlist before starting: numeric user ids only", async () => {
    const { home } = await telegramHome('allowlist = [424242, "@alice"]');
    const result = await runCli(home, ["start"], secrets());
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      '"channels.telegram.allowlist.1" must be a numeric Telegram user id like 123456789, not an @username',
    );
    expect(result.stderr).toContain("@userinfobot");
  });

  it("starts with a token Telegram refuses, and says so in the channel's status", async () => {
    const { home, port } = await telegramHome("allowlist = [424242]");
    const daemon = await startDaemon(home, port, secrets("123456:revoked-token"));
    try {
      const status = await eventually(
        async () => (await daemon.request<ChannelStatusBody>("GET", "/api/v1/channels/telegram")).body,
        (s) => s.error !== undefined,
        "the token's refusal in the status",
      );
      expect(status).toMatchObject({ platform: "telegram", mode: "webhook", connected: false });
      expect(status.error).toContain("the bot token in TELEGRAM_BOT_TOKEN was not accepted by Telegram");
      expect(status.error).toContain("401: Unauthorized");
      expect(JSON.stringify(status)).not.toContain("revoked-token");
      await until(() => daemon.output().includes("telegram: bot token refused"), "the log line");
      expect(daemon.output()).not.toContain("revoked-token");
    } finally {
      await daemon.stop();
    }
  });

  describe("a running channel", () => {
    let daemon: TestDaemon;
    let home: string;
    let port: number;
    let webhookPort: number;
    let nextUpdate = 1;
    const send = (from: number, text: string, update_id = nextUpdate++) =>
      telegram.deliver(textUpdate({ update_id, from, chat: from, text }));
    const status = async () =>
      (await daemon.request<ChannelStatusBody>("GET", "/api/v1/channels/telegram")).body;

    beforeAll(async () => {
      ({ home, port, webhookPort } = await telegramHome(
        `allowlist = [${ALLOWED}, ${HASTY}, ${CALM}, ${PRIVATE}]\nrate_per_minute = 2\nnotify_chat = ${NOTIFY_CHAT}`,
      ));
      daemon = await startDaemon(home, port, secrets());
      await until(() => telegram.webhook()?.url === `http://127.0.0.1:${webhookPort}/telegram`, "setWebhook");
    });
    afterAll(async () => {
      await daemon?.stop();
    });

    it("registers the tunnel's URL with its secret, for messages and button presses, and reports it", async () => {
      expect(telegram.webhook()).toEqual({
        url: `http://127.0.0.1:${webhookPort}/telegram`,
        secret_token: SECRET,
        allowed_updates: ["message", "callback_query"],
      });
      await until(() => telegram.calls.some((c) => c.method === "getMe" && c.authorized), "getMe");
      const state = await status();
      expect(state).toMatchObject({
        platform: "telegram",
        mode: "webhook",
        connected: true,
        webhook_url: `http://127.0.0.1:${webhookPort}/telegram`,
        fighter: "spar",
        allowlist_size: 4,
      });
      expect(state.error).toBeUndefined();
      const everything = JSON.stringify(state) + daemon.output();
      expect(everything).not.toContain(SECRET);
      expect(everything).not.toContain(telegram.token);
    });

    it("ignores an update that is not text with 200: no model call, no reply", async () => {
      const [calls, sent] = [fake.calls().length, telegram.sent().length];
      const photo = {
        update_id: nextUpdate++,
        message: {
          message_id: 1,
          date: Math.floor(Date.now() / 1000),
          from: { id: ALLOWED, is_bot: false, first_name: "Ada" },
          chat: { id: ALLOWED, type: "private" },
          photo: [{ file_id: "AgAD", file_unique_id: "AQAD", width: 90, height: 90 }],
        },
      };
      expect(await telegram.deliver(photo)).toBe(200);
      expect(await telegram.deliver({ update_id: nextUpdate++, edited_message: photo.message })).toBe(200);
      expect(await send(ALLOWED, "and now in words")).toBe(200);
      await until(() => telegram.sent().length > sent, "the reply to the text");
      expect(fake.calls().length).toBe(calls + 1);
      expect(telegram.sent().slice(sent)).toEqual([
        expect.objectContaining({ chat_id: String(ALLOWED), text: "echo: and now in words" }),
      ]);
    });

    it("keeps a chat's bout apart from the local user's: neither's words reach the other's prompt", async () => {
      /** The messages the model was sent for the turn whose last user message was `text`. */
      const promptOf = (text: string) =>
        JSON.stringify(
          fake.requests.findLast((r) => r.body?.messages?.at(-1)?.content === text)?.body?.messages ?? null,
        );
      const replied = (text: string) =>
        until(() => telegram.sent().some((m) => m.text === `echo: ${text}`), text);
      expect(await send(PRIVATE, "what is the weather?")).toBe(200);
      await replied("what is the weather?");
      // The operator talks to the same fighter on the command line.
      const local = await daemon.cli(["chat", "my bank PIN is 4321"]);
      expect(local.code, local.stderr).toBe(0);
      expect(promptOf("my bank PIN is 4321")).not.toContain("weather");
      expect(await send(PRIVATE, "and tomorrow?")).toBe(200);
      await replied("and tomorrow?");
      const channelPrompt = promptOf("and tomorrow?");
      expect(channelPrompt).toContain("what is the weather?");
      expect(channelPrompt).not.toContain("bank PIN");

      const origin = `channel:telegram:${PRIVATE}`;
      const listed = await daemon.cli(["bout", "list", "--json"]);
      const { bouts } = JSON.parse(listed.stdout) as { bouts: { id: string; origin: string }[] };
      expect(bouts.map((b) => b.origin)).toEqual(expect.arrayContaining([origin, "user"]));
      const chats = await daemon.request<{ bouts: { origin: string }[] }>(
        "GET",
        "/api/v1/fighters/spar/bouts?origin=channel",
      );
      expect(chats.body.bouts.length).toBeGreaterThan(0);
      expect(chats.body.bouts.every((b) => b.origin.startsWith("channel:telegram:"))).toBe(true);
      const mine = await daemon.cli(["bout", "list", "--origin", "user"]);
      expect(mine.stdout.trimEnd().split("\n").slice(1)).toEqual([expect.stringMatching(/^\S+\s+user\s+/)]);
    });

    it("answers a stranger 403 with a JSON error, and logs the id an operator would allow", async () => {
      const response = await fetch(telegram.webhook()?.url ?? "", {
        method: "POST",
        headers: { "content-type": "application/json", "X-Telegram-Bot-Api-Secret-Token": SECRET },
        body: JSON.stringify(textUpdate({ update_id: nextUpdate++, from: 999001, chat: 999001, text: "hi" })),
      });
      expect(response.status).toBe(403);
      expect(await response.json()).toMatchObject({ error: { code: "FORBIDDEN" } });
      await until(
        () => /telegram: sender not on the allowlist sender="999001"/.test(daemon.output()),
        "the refusal's log line, naming the sender",
      );
    });

    it("gives a sender over rate_per_minute 429 and no model call; Telegram's retry is a replay", async () => {
      const [calls, refused] = [fake.calls().length, (await status()).refused.rate];
      expect(await send(HASTY, "one")).toBe(200);
      expect(await send(HASTY, "two")).toBe(200);
      const over = nextUpdate++;
      expect(await send(HASTY, "three", over)).toBe(429);
      expect(await send(HASTY, "three", over)).toBe(200);
      await until(() => fake.calls().length >= calls + 2, "the two turns");
      // Another sender's message is answered, so a third turn would have started by now.
      await send(ALLOWED, "someone else");
      await until(
        () => telegram.sent().some((m) => m.text === "echo: someone else"),
        "the other sender's reply",
      );
      expect(fake.calls().length).toBe(calls + 3);
      expect(fake.calls().some((c) => c.last_user_text.includes("three"))).toBe(false);
      expect((await status()).refused.rate).toBe(refused + 1);
    });

    it("posts channel_notify to notify_chat when the fighter names no chat", async () => {
      const spawned = await daemon.request("POST", "/api/v1/fighters", {
        manifest: {
          name: "herald",
          description: "posts news",
          system_prompt: "You are herald.",
          capabilities: [{ type: "channel_notify" }],
        },
      });
      expect(spawned.status).toBe(201);
      fake.enqueue(
        { tool_calls: [{ name: "channel_notify", arguments: { text: "the build is green" } }] },
        { text: "posted" },
      );
      const reply = await daemon.request<{ response: string }>("POST", "/api/v1/fighters/herald/message", {
        message: "tell the team",
      });
      expect(reply.status).toBe(200);
      expect(
        telegram
          .sent()
          .filter((m) => m.chat_id === String(NOTIFY_CHAT))
          .map((m) => m.text),
      ).toEqual(["the build is green"]);
    });

    it("limits channel_notify to chats that wrote to the fighter and the grant's targets (an evil model)", async () => {
      const NEWS = "-1001112223334";
      const spawned = await daemon.request("POST", "/api/v1/fighters", {
        manifest: {
          name: "crier",
          description: "posts news",
          system_prompt: "You are crier.",
          capabilities: [{ type: "channel_notify", targets: [`telegram:${NEWS}`] }],
        },
      });
      expect(spawned.status).toBe(201);
      const sent = telegram.sent().length;
      // A prompt-injected model names a stranger's chat and a public channel: both refused, to it.
      const evil = (chat: string, text: string) => ({ name: "channel_notify", arguments: { chat, text } });
      fake.enqueue(
        { tool_calls: [evil("999777", "evil one"), evil("@evil_news", "evil two")] },
        { text: "done" },
      );
      const told = await daemon.request("POST", "/api/v1/fighters/crier/message", { message: "spread it" });
      expect(told.status).toBe(200);
      const results = fake.calls().at(-1)?.tool_results ?? [];
      expect(results).toHaveLength(2);
      for (const [result, chat] of [
        [results[0], "999777"],
        [results[1], "@evil_news"],
      ]) {
        const { error } = JSON.parse(result ?? "{}") as { error: { code: string; message: string } };
        expect(error.code).toBe("CAPABILITY_DENIED");
        expect(error.message).toContain(`"${chat}" on telegram is not a chat this fighter may post to`);
      }
      // Not even spar, with full_access, posts to a chat that never wrote to it.
      fake.enqueue({ tool_calls: [evil("999777", "evil three")] }, { text: "done" });
      await daemon.request("POST", "/api/v1/fighters/spar/message", { message: "spread it" });
      expect(fake.calls().at(-1)?.tool_results.at(-1)).toContain("CAPABILITY_DENIED");
      expect(telegram.sent().slice(sent)).toEqual([]);

      // Permitted: the grant's target, and (for spar) the chat of a sender on the allowlist, who wrote to it.
      fake.enqueue({ tool_calls: [evil(NEWS, "the news")] }, { text: "posted" });
      await daemon.request("POST", "/api/v1/fighters/crier/message", { message: "post the news" });
      fake.enqueue({ tool_calls: [evil(String(ALLOWED), "a word for Ada")] }, { text: "posted" });
      await daemon.request("POST", "/api/v1/fighters/spar/message", { message: "tell Ada" });
      // crier was never written to by Ada: her chat is not its target.
      fake.enqueue({ tool_calls: [evil(String(ALLOWED), "crier to Ada")] }, { text: "done" });
      await daemon.request("POST", "/api/v1/fighters/crier/message", { message: "tell Ada" });
      expect(fake.calls().at(-1)?.tool_results.at(-1)).toContain("CAPABILITY_DENIED");
      expect(
        telegram
          .sent()
          .slice(sent)
          .map((m) => [m.chat_id, m.text]),
      ).toEqual([
        [NEWS, "the news"],
        [String(ALLOWED), "a word for Ada"],
      ]);
    });

    it("runs a delivery replayed after a restart no second time, and refuses a message outside the window", async () => {
      const replayed = textUpdate({
        update_id: nextUpdate++,
        from: CALM,
        chat: CALM,
        text: "only once",
      });
      const sent = telegram.sent().length;
      expect(await telegram.deliver(replayed)).toBe(200);
      await until(() => telegram.sent().length > sent, "the reply to the first delivery");
      const turns = () => fake.calls().filter((c) => c.last_user_text.includes("only once")).length;
      expect(turns()).toBe(1);
      await daemon.stop();
      daemon = await startDaemon(home, port, secrets());
      await until(() => telegram.webhook()?.url === `http://127.0.0.1:${webhookPort}/telegram`, "setWebhook");
      const again = await fetch(telegram.webhook()?.url ?? "", {
        method: "POST",
        headers: { "content-type": "application/json", "X-Telegram-Bot-Api-Secret-Token": SECRET },
        body: JSON.stringify(replayed),
      });
      expect(again.status).toBe(200);
      expect(await again.json()).toEqual({ ok: true, replay: true });
      // A message sent 25 hours ago, under an id never seen: outside Telegram's one-day window.
      const old = textUpdate({
        update_id: nextUpdate++,
        from: ALLOWED,
        chat: ALLOWED,
        text: "from yesterday",
      }) as {
        message: { date: number };
      };
      old.message.date -= 25 * 3600;
      const stale = await fetch(telegram.webhook()?.url ?? "", {
        method: "POST",
        headers: { "content-type": "application/json", "X-Telegram-Bot-Api-Secret-Token": SECRET },
        body: JSON.stringify(old),
      });
      expect(stale.status).toBe(200);
      expect(await stale.json()).toEqual({ ok: true, ignored: "outside the window" });
      // A fresh message is answered, so the replay would have run by now had it been taken.
      const before = telegram.sent().length;
      expect(await send(ALLOWED, "fresh after the restart")).toBe(200);
      await until(() => telegram.sent().length > before, "the reply to the fresh message");
      expect(turns()).toBe(1);
      expect(fake.calls().some((c) => c.last_user_text.includes("from yesterday"))).toBe(false);
    });

    it("registers the webhook again at every start, at the tunnel's new URL", async () => {
      const before = setWebhooks();
      await daemon.stop();
      // The tunnel's URL changes between runs, as a quick tunnel's does.
      writeConfig(
        home,
        port,
        fake.url,
        `\n[creed]\nreflect = false\n\n[channels]\nwebhook_listen = "127.0.0.1:${webhookPort}"\n\n` +
          `[channels.telegram]\napi_root = "${telegram.url}"\nallowlist = [${ALLOWED}]\n\n` +
          `[tunnel]\nmode = "manual"\nurl = "http://localhost:${webhookPort}"\n` +
          allowUnasked(["channel_notify"]),
      );
      daemon = await startDaemon(home, port, secrets());
      await until(() => setWebhooks() > before, "setWebhook after the restart");
      expect(telegram.webhook()?.url).toBe(`http://localhost:${webhookPort}/telegram`);
      const sent = telegram.sent().length;
      expect(await send(ALLOWED, "after the restart")).toBe(200);
      await until(() => telegram.sent().length > sent, "the reply after the restart");
      expect(telegram.sent().at(-1)?.text).toBe("echo: after the restart");
    });
  });
});
