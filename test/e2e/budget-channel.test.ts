/**
 * A channel's owner is told once (issue 31 item 2): the real daemon from dist, a Telegram channel
 * against the fake Bot API (webhook behind a manual tunnel) and the fake OpenAI server, with a token
 * budget on every Telegram chat (`[budgets.channels.telegram]`). The first message's reply passes
 * the warning share (`budget.warning` on the WebSocket); the next two are over the budget
 * (`budget.exceeded` each, with their fields): the chat gets one notice, naming the budget and when
 * it resets, not one per refused message.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import { type FakeTelegram, startFakeTelegram, textUpdate } from "../fakes/telegram-server.js";
import {
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";

const CHAT = 424242;
const SECRET = randomBytes(24).toString("base64url");
const LIMIT = 300;

/** Waits until `probe` answers something truthy, polling (no timing is asserted). */
async function until<T>(probe: () => T | undefined | false, what: string): Promise<T> {
  for (let i = 0; i < 300; i++) {
    const value = probe();
    if (value) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe("a channel's budget: the chat is told once", () => {
  let fake: FakeOpenAI;
  let telegram: FakeTelegram;
  let home: string;
  let daemon: TestDaemon;
  let ws: WebSocket;
  const events: { kind: string; [key: string]: unknown }[] = [];
  let update = 1;
  const send = (text: string) =>
    telegram.deliver(textUpdate({ update_id: update++, from: CHAT, chat: CHAT, text }));
  const toChat = () => telegram.sent().filter((m) => m.chat_id === String(CHAT));

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    telegram = await startFakeTelegram();
    home = tempHome();
    const port = await freePort();
    const webhookPort = await freePort();
    writeConfig(
      home,
      port,
      fake.url,
      `\n[creed]\nreflect = false\n\n[channels]\nwebhook_listen = "127.0.0.1:${webhookPort}"\n\n` +
        `[channels.telegram]\napi_root = "${telegram.url}"\nallowlist = [${CHAT}]\n\n` +
        `[tunnel]\nmode = "manual"\nurl = "http://127.0.0.1:${webhookPort}"\n\n` +
        `[budgets]\ntime_zone = "UTC"\nwarn_at_percent = 50\n\n[budgets.channels.telegram]\ndaily_tokens = ${LIMIT}\n`,
    );
    daemon = await startDaemon(home, port, {
      TELEGRAM_BOT_TOKEN: telegram.token,
      TELEGRAM_WEBHOOK_SECRET: SECRET,
    });
    await until(() => telegram.webhook()?.url === `http://127.0.0.1:${webhookPort}/telegram`, "setWebhook");
    ws = new WebSocket(`ws://127.0.0.1:${port}/api/v1/ws`);
    ws.on("message", (data) => {
      const frame = JSON.parse(data.toString()) as { type: string; kind: string };
      if (frame.type === "event") events.push(frame);
    });
    await new Promise<void>((done, fail) => {
      ws.once("open", () => done());
      ws.once("error", fail);
    });
    ws.send(JSON.stringify({ type: "subscribe", kinds: ["budget.warning", "budget.exceeded"] }));
    await new Promise((r) => setTimeout(r, 200));
  }, 60_000);

  afterAll(async () => {
    ws?.close();
    await daemon?.stop();
    await telegram?.close();
    await fake?.close();
    removeHome(home);
  });

  it("answers the first message and warns past the share; two refused messages bring one notice", async () => {
    // 400 tokens: past the warning's 150, and past the limit of 300 once settled.
    fake.setDefault(() => ({ text: "first answer", usage: { prompt_tokens: 300, completion_tokens: 100 } }));
    expect(await send("hello")).toBe(200);
    await until(() => toChat().some((m) => m.text === "first answer"), "the first reply");
    const warning = await until(() => events.find((e) => e.kind === "budget.warning"), "budget.warning");
    expect(warning).toMatchObject({
      kind: "budget.warning",
      budget: "channel:telegram:daily_tokens",
      limit: LIMIT,
      spent: 400,
      percent: 133,
      unit: "tokens",
      currency: "USD",
      resets_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT00:00:00\.000Z$/),
    });

    expect(await send("second")).toBe(200);
    await until(() => events.filter((e) => e.kind === "budget.exceeded").length === 1, "the first refusal");
    const notice = await until(
      () => toChat().find((m) => m.text.includes("channel:telegram:daily_tokens")),
      "the chat's notice",
    );
    expect(notice.text).toBe(
      `The budget channel:telegram:daily_tokens is used up (400 tokens of ${LIMIT} tokens): no more replies here until ${warning.resets_at}.`,
    );
    expect(await send("third")).toBe(200);
    await until(() => events.filter((e) => e.kind === "budget.exceeded").length === 2, "the second refusal");
    for (const exceeded of events.filter((e) => e.kind === "budget.exceeded")) {
      expect(exceeded).toMatchObject({
        budget: "channel:telegram:daily_tokens",
        limit: LIMIT,
        spent: 400,
        unit: "tokens",
        currency: "USD",
        resets_at: warning.resets_at,
        action: "stopped",
        origin: `channel:telegram:${CHAT}`,
        fighter_id: expect.any(String),
        turn_id: expect.any(String),
      });
    }
    // Each refused message is answered with its code, as any failed turn is; the notice comes once.
    await new Promise((r) => setTimeout(r, 500));
    expect(
      toChat()
        .map((m) => m.text)
        .sort(),
    ).toEqual(
      [
        "first answer",
        notice.text,
        "Sorry, I could not answer that (BUDGET_EXCEEDED).",
        "Sorry, I could not answer that (BUDGET_EXCEEDED).",
      ].sort(),
    );
    // Only the first message reached the model.
    expect(fake.calls()).toHaveLength(1);
  });
});
