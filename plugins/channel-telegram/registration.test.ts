import { Api } from "grammy";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Logger, TunnelInfo } from "../../sdk/index.js";
import { type FakeTelegram, startFakeTelegram } from "../../test/fakes/telegram-server.js";
import { type Registration, registerWebhook } from "./registration.js";

const SECRET = "registration_secret_0123";

/** A logger that keeps its lines, to check what an operator would read. */
function recordingLog(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const keep = (message: string, fields?: Record<string, unknown>) =>
    void lines.push(`${message} ${JSON.stringify(fields ?? {})}`);
  return { lines, info: keep, warn: keep, error: keep };
}

describe("channel-telegram webhook registration, grammy against the fake Bot API", () => {
  let telegram: FakeTelegram;
  const tunnel = async (): Promise<TunnelInfo> => ({ url: "https://bots.example.com", mode: "manual" });

  beforeAll(async () => {
    telegram = await startFakeTelegram();
  });
  afterAll(() => telegram.close());

  async function register(token: string, tunnelFn = tunnel) {
    const state: Registration = { connected: false };
    const log = recordingLog();
    const api = new Api(token, { apiRoot: telegram.url });
    await registerWebhook({
      api,
      tunnel: tunnelFn,
      path: "/telegram",
      secret: SECRET,
      tokenEnv: "TG_TOKEN",
      state,
      log,
    });
    return { state, log };
  }

  it("checks the token, then registers the tunnel's URL with the secret, for messages and button presses", async () => {
    const { state, log } = await register(telegram.token);
    expect(state).toEqual({
      connected: true,
      url: "https://bots.example.com/telegram",
      bot: "spar_test_bot",
    });
    expect(telegram.webhook()).toEqual({
      url: "https://bots.example.com/telegram",
      secret_token: SECRET,
      allowed_updates: ["message", "callback_query"],
    });
    expect(telegram.calls.slice(-2).map((c) => c.method)).toEqual(["getMe", "setWebhook"]);
    expect(log.lines.join("\n")).not.toContain(SECRET);
  });

  it("keeps a refused token as the error, naming its variable, and registers nothing", async () => {
    await new Api(telegram.token, { apiRoot: telegram.url }).deleteWebhook();
    const { state, log } = await register("123:not-the-token");
    expect(state.connected).toBe(false);
    expect(state.error).toContain("the bot token in TG_TOKEN was not accepted by Telegram");
    expect(state.error).toContain("401: Unauthorized");
    expect(telegram.webhook()).toBeUndefined();
    expect(log.lines.join("\n")).not.toContain("not-the-token");
  });

  it("keeps a tunnel that did not open as the error", async () => {
    const { state } = await register(telegram.token, async () => {
      throw new Error("cloudflared is not installed");
    });
    expect(state).toMatchObject({
      connected: false,
      error: "no tunnel, so no webhook: cloudflared is not installed",
    });
  });

  it("says which network error stopped it when the Bot API cannot be reached", async () => {
    const closed = await startFakeTelegram();
    await closed.close();
    const state: Registration = { connected: false };
    const api = new Api(closed.token, { apiRoot: closed.url });
    await registerWebhook({
      api,
      tunnel,
      path: "/telegram",
      secret: SECRET,
      tokenEnv: "TG_TOKEN",
      state,
      log: recordingLog(),
    });
    expect(state.error).toContain("Network request for 'getMe' failed!");
    expect(state.error).toContain("ECONNREFUSED");
    expect(state.error).not.toContain(closed.token);
  });

  it("gives up quietly when the daemon stops first: no error, no webhook", async () => {
    await new Api(telegram.token, { apiRoot: telegram.url }).deleteWebhook();
    const stopping = new AbortController();
    stopping.abort();
    const state: Registration = { connected: false };
    const log = recordingLog();
    const api = new Api(telegram.token, { apiRoot: telegram.url });
    await registerWebhook({
      api,
      tunnel,
      path: "/telegram",
      secret: SECRET,
      tokenEnv: "TG_TOKEN",
      state,
      log,
      signal: stopping.signal,
    });
    expect(state).toEqual({ connected: false });
    expect(log.lines).toEqual([]);
    expect(telegram.webhook()).toBeUndefined();
  });
});
