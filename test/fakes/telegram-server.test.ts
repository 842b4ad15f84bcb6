import { Api, GrammyError } from "grammy";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeHttp } from "./http-fake.js";
import { FAKE_BOT, type FakeTelegram, startFakeTelegram, textUpdate } from "./telegram-server.js";

async function caught(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof Error) return err;
    throw new Error(`expected an Error, got ${String(err)}`);
  }
  throw new Error("expected the promise to reject");
}

describe("fake Telegram Bot API, driven by grammy", () => {
  let telegram: FakeTelegram;
  let api: Api;

  beforeAll(async () => {
    telegram = await startFakeTelegram();
    api = new Api(telegram.token, { apiRoot: telegram.url });
  });
  afterAll(() => telegram.close());

  it("answers getMe with the bot, and 401 Unauthorized for another token", async () => {
    expect(await api.getMe()).toMatchObject({ id: FAKE_BOT.id, is_bot: true, username: FAKE_BOT.username });
    const err = await caught(new Api("123:wrong", { apiRoot: telegram.url }).getMe());
    expect(err).toBeInstanceOf(GrammyError);
    expect(err).toMatchObject({ error_code: 401, description: "Unauthorized" });
    expect(telegram.calls.at(-1)).toEqual({ method: "getMe", payload: {}, authorized: false });
  });

  it("records setWebhook, reports it in getWebhookInfo, forgets it on deleteWebhook", async () => {
    await api.setWebhook("http://127.0.0.1:1/telegram", {
      secret_token: "abc_DEF-0123456789",
      allowed_updates: ["message"],
    });
    expect(telegram.webhook()).toEqual({
      url: "http://127.0.0.1:1/telegram",
      secret_token: "abc_DEF-0123456789",
      allowed_updates: ["message"],
    });
    expect(await api.getWebhookInfo()).toMatchObject({
      url: "http://127.0.0.1:1/telegram",
      allowed_updates: ["message"],
    });
    const bad = await caught(api.setWebhook("http://127.0.0.1:1/telegram", { secret_token: "has spaces" }));
    expect(bad).toMatchObject({ error_code: 400 });
    await api.deleteWebhook();
    expect(telegram.webhook()).toBeUndefined();
    expect((await api.getWebhookInfo()).url).toBe("");
  });

  it("sends messages up to 4,096 characters and counts chat actions", async () => {
    const message = await api.sendMessage(-100123, "hello");
    expect(message).toMatchObject({ chat: { id: -100123 }, text: "hello" });
    expect(telegram.sent().at(-1)).toEqual({
      message_id: message.message_id,
      chat_id: "-100123",
      text: "hello",
    });
    await api.sendMessage("-100123", "x".repeat(4096));
    const long = await caught(api.sendMessage("-100123", "x".repeat(4097)));
    expect(long).toMatchObject({ error_code: 400, description: "Bad Request: message is too long" });
    const before = telegram.chatActions();
    await api.sendChatAction(42, "typing");
    expect(telegram.chatActions()).toBe(before + 1);
  });

  it("delivers an Update to the webhook with the secret header, as Telegram does", async () => {
    const received: { secret: unknown; type: unknown; body: unknown }[] = [];
    const receiver = await startFakeHttp(async (req, res, body) => {
      received.push({
        secret: req.headers["x-telegram-bot-api-secret-token"],
        type: req.headers["content-type"],
        body: JSON.parse(body),
      });
      res.writeHead(req.headers["x-telegram-bot-api-secret-token"] === "right_secret_0123" ? 200 : 401).end();
    });
    try {
      await api.setWebhook(`http://127.0.0.1:${receiver.port}/hook`, { secret_token: "right_secret_0123" });
      const update = textUpdate({ update_id: 5, from: 42, chat: 42, text: "hi" });
      expect(await telegram.deliver(update)).toBe(200);
      expect(await telegram.deliver(update, { secret: "wrong_secret_0123" })).toBe(401);
      expect(await telegram.deliver(update, { secret: null })).toBe(401);
      expect(received.map((r) => r.secret)).toEqual(["right_secret_0123", "wrong_secret_0123", undefined]);
      expect(received[0]).toMatchObject({
        type: "application/json",
        body: { update_id: 5, message: { from: { id: 42 }, chat: { id: 42, type: "private" }, text: "hi" } },
      });
    } finally {
      await receiver.close();
    }
  });
});
