/**
 * The Slack channel through the real daemon, beyond the shared channel contract: the Request URL's
 * `url_verification` handshake (answered only when signed), Slack's 300 s signature window, the
 * bot's own messages and edits left alone, a redelivery marked `X-Slack-Retry-Num` processed once,
 * the ⏳ reaction standing in for typing, the rate notice, a refused token shown in status without
 * stopping the daemon, and the start refused when a secret or an allowlist entry is wrong; the
 * webhook listener's connection limits (`[api]`): one address's idle sockets neither shut out a
 * delivery from another nor stay open. The fake Slack signs deliveries as Slack does; bolt's own
 * verifier agrees with it.
 */
import { createServer } from "node:http";
import { connect, type Socket } from "node:net";
import { verifySlackRequest } from "@slack/bolt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  type FakeSlack,
  messageEvent,
  SLACK_BOT,
  type SlackMessageEvent,
  startFakeSlack,
} from "../fakes/slack-server.js";
import {
  freePort,
  removeHome,
  runCli,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";

const ALLOWED = "U0ALLOWED1";
const RAPID = "U0RAPID001";
const SECRET = "8f742231b10e8888abcd99yyyzzz85a5";
const RATE = 8;

/** Waits until `test` holds, polling (no timing is asserted). */
async function until<T>(probe: () => T | Promise<T>, test: (value: T) => boolean, what: string): Promise<T> {
  for (let i = 0; i < 400; i++) {
    const value = await probe();
    if (test(value)) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** A home whose config.toml has a `[channels.slack]` table with `table`, a manual tunnel, and `extra`. */
async function slackHome(llmUrl: string, table: string, extra = "") {
  const home = tempHome();
  const port = await freePort();
  const webhookPort = await freePort();
  writeConfig(
    home,
    port,
    llmUrl,
    `\n[creed]\nreflect = false\n\n[channels]\nwebhook_listen = "127.0.0.1:${webhookPort}"\n\n` +
      `[channels.slack]\n${table}\n\n[tunnel]\nmode = "manual"\nurl = "http://127.0.0.1:${webhookPort}"\n${extra}`,
  );
  return { home, port, webhookPort, events: `http://127.0.0.1:${webhookPort}/slack/events` };
}

describe("channel-slack", () => {
  let llm: FakeOpenAI;
  let slack: FakeSlack;
  let daemon: TestDaemon;
  let home: string;
  let port: number;
  let webhookPort: number;
  let events: string;
  const calls = () => llm.calls().length;
  const postedTo = (chat: string) => slack.posted().filter((p) => p.channel === chat);
  const deliver = (
    event: SlackMessageEvent,
    options: Parameters<FakeSlack["deliver"]>[2] = { signingSecret: SECRET },
  ) => slack.deliver(events, event, options);

  beforeAll(async () => {
    llm = await startFakeOpenAI();
    slack = await startFakeSlack();
    const made = await slackHome(
      llm.url,
      `allowlist = ["${ALLOWED}", "${RAPID}"]\napi_root = "${slack.url}"\nrate_per_minute = ${RATE}`,
      // One peer could take every connection (32) were it not for its share (16); idle ones go in 2 s.
      "\n[api]\nmax_connections = 32\nmax_connections_per_peer = 16\nidle_timeout_ms = 2000\n",
    );
    home = made.home;
    port = made.port;
    webhookPort = made.webhookPort;
    events = made.events;
    daemon = await startDaemon(home, port, {
      SLACK_BOT_TOKEN: slack.token,
      SLACK_SIGNING_SECRET: SECRET,
    });
    await until(slack.calls, (c) => c.some((call) => call.method === "auth.test"), "auth.test");
  }, 60_000);

  afterAll(async () => {
    await daemon?.stop();
    await slack?.close();
    await llm?.close();
    if (home) removeHome(home);
  });

  it("answers the url_verification challenge only when it is signed", async () => {
    const genuine = await slack.challenge(events, { signingSecret: SECRET });
    expect(genuine.status).toBe(200);
    expect(JSON.parse(genuine.body)).toEqual({ challenge: genuine.challenge });
    const forged = await slack.challenge(events, { signingSecret: SECRET, forge: true });
    expect(forged.status).toBe(401);
    expect(forged.body).not.toContain(forged.challenge);
  });

  it("refuses a delivery signed more than 300 s ago with 401, and nothing runs", async () => {
    const before = calls();
    const stale = await deliver(messageEvent({ user: ALLOWED, channel: "C0STALE001", text: "old news" }), {
      signingSecret: SECRET,
      timestamp: Math.floor(Date.now() / 1000) - 301,
    });
    expect(stale.status).toBe(401);
    const fresh = await deliver(messageEvent({ user: ALLOWED, channel: "C0FRESH001", text: "new news" }));
    expect(fresh.status).toBe(200);
    await until(
      () => postedTo("C0FRESH001"),
      (p) => p.length > 0,
      "the fresh reply",
    );
    expect(calls()).toBe(before + 1);
    expect(postedTo("C0STALE001")).toEqual([]);
  });

  it("leaves the bot's own messages and edits alone: no model call, no reply", async () => {
    const before = calls();
    const chat = "C0QUIET001";
    const own = messageEvent({
      user: SLACK_BOT.user_id,
      channel: chat,
      text: "echo: something I said",
      extra: { bot_id: SLACK_BOT.bot_id, app_id: SLACK_BOT.app_id },
    });
    const edit: SlackMessageEvent = {
      type: "message",
      subtype: "message_changed",
      channel: chat,
      ts: "1700000000.000900",
      message: {
        type: "message",
        user: ALLOWED,
        text: "edited to say something new",
        ts: "1700000000.000800",
      },
      previous_message: { type: "message", user: ALLOWED, text: "something", ts: "1700000000.000800" },
    };
    const botMessage = messageEvent({
      user: ALLOWED,
      channel: chat,
      text: "from a workflow",
      extra: { subtype: "bot_message", bot_id: "B0OTHERBOT" },
    });
    for (const event of [own, edit, botMessage]) {
      const answer = await deliver(event);
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.body)).toMatchObject({ ok: true, ignored: expect.any(String) });
    }
    const genuine = await deliver(messageEvent({ user: ALLOWED, channel: "C0LOUD0001", text: "answer me" }));
    expect(genuine.status).toBe(200);
    await until(
      () => postedTo("C0LOUD0001"),
      (p) => p.length > 0,
      "the genuine reply",
    );
    expect(calls()).toBe(before + 1);
    expect(postedTo(chat)).toEqual([]);
  });

  it("processes an event once when Slack redelivers it with X-Slack-Retry-Num", async () => {
    const before = calls();
    const event = messageEvent({ user: ALLOWED, channel: "C0RETRY001", text: "say it once" });
    const first = await deliver(event);
    expect(first.status).toBe(200);
    await until(
      () => postedTo("C0RETRY001"),
      (p) => p.length > 0,
      "the first reply",
    );
    for (const retryNum of [1, 2]) {
      const again = await deliver(event, { signingSecret: SECRET, eventId: first.eventId, retryNum });
      expect(again.status).toBe(200);
      expect(JSON.parse(again.body)).toMatchObject({ replay: true });
    }
    await deliver(messageEvent({ user: ALLOWED, channel: "C0RETRY002", text: "and then this" }));
    await until(
      () => postedTo("C0RETRY002"),
      (p) => p.length > 0,
      "the next reply",
    );
    expect(calls()).toBe(before + 2);
    expect(postedTo("C0RETRY001")).toHaveLength(1);
  });

  it("shows the ⏳ reaction on the member's message while the turn runs, and takes it away after", async () => {
    const event = messageEvent({ user: ALLOWED, channel: "C0WORKING1", text: "think hard" });
    await deliver(event);
    await until(
      () => postedTo("C0WORKING1"),
      (p) => p.length > 0,
      "the reply",
    );
    const reactions = await until(
      () =>
        slack.calls().filter((c) => c.params.channel === "C0WORKING1" && c.method.startsWith("reactions.")),
      (c) => c.length >= 2,
      "the reaction removed",
    );
    expect(reactions.map((c) => [c.method, c.params.timestamp, c.params.name])).toEqual([
      ["reactions.add", event.ts, "hourglass_flowing_sand"],
      ["reactions.remove", event.ts, "hourglass_flowing_sand"],
    ]);
    expect(slack.reactions().present.some((r) => r.channel === "C0WORKING1")).toBe(false);
  });

  it("drops a member's messages past rate_per_minute with 200, telling them once", async () => {
    const chat = "C0RAPID001";
    const before = calls();
    for (let i = 0; i < RATE; i++) {
      const answer = await deliver(messageEvent({ user: RAPID, channel: chat, text: `quick ${i}` }));
      expect(answer.status).toBe(200);
    }
    for (const extra of ["one too many", "two too many"]) {
      const answer = await deliver(messageEvent({ user: RAPID, channel: chat, text: extra }));
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.body)).toMatchObject({ rate_limited: true });
    }
    const posted = await until(
      () => postedTo(chat),
      (p) => p.length >= RATE + 1,
      "the replies and the notice",
    );
    expect(posted.filter((p) => p.text.startsWith("You are sending messages faster"))).toHaveLength(1);
    expect(calls()).toBe(before + RATE);
    expect(llm.calls().some((c) => c.last_user_text.includes("too many"))).toBe(false);
    const status = await daemon.request<{ refused: { rate: number } }>("GET", "/api/v1/channels/slack");
    expect(status.body.refused.rate).toBe(2);
  });

  it("shows the events URL to paste in the app's settings, with no secret in the status", async () => {
    const status = await daemon.request<Record<string, unknown>>("GET", "/api/v1/channels/slack");
    expect(status.body).toMatchObject({
      platform: "slack",
      mode: "webhook",
      connected: true,
      webhook_url: events,
    });
    expect(status.body.error).toBeUndefined();
    expect(JSON.stringify(status.body)).not.toContain(slack.token);
    expect(JSON.stringify(status.body)).not.toContain(SECRET);
    expect(daemon.output()).toContain(events);
    expect(daemon.output()).not.toContain(slack.token);
    expect(daemon.output()).not.toContain(SECRET);
  });

  it("signs deliveries as Slack does: bolt's own verifier accepts the fake's signature", async () => {
    let seen: { headers: Record<string, string | string[] | undefined>; body: string } | undefined;
    const catcher = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        seen = { headers: req.headers, body: Buffer.concat(chunks).toString("utf8") };
        res.end("ok");
      });
    });
    await new Promise<void>((r) => catcher.listen(0, "127.0.0.1", r));
    const address = catcher.address();
    const url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}/`;
    try {
      await slack.deliver(url, messageEvent({ user: ALLOWED, channel: "C0CHECK001", text: "check me" }), {
        signingSecret: SECRET,
      });
    } finally {
      catcher.close();
    }
    if (!seen) throw new Error("the fake delivered nothing");
    const signed = {
      signingSecret: SECRET,
      body: seen.body,
      headers: {
        "x-slack-signature": String(seen.headers["x-slack-signature"]),
        "x-slack-request-timestamp": Number(seen.headers["x-slack-request-timestamp"]),
      },
    };
    expect(() => verifySlackRequest(signed)).not.toThrow();
    expect(() => verifySlackRequest({ ...signed, signingSecret: "another secret" })).toThrow();
  });

  it("takes a delivery from another address while one holds its share of idle sockets, and closes those (issue 28 item 29)", async () => {
    // The attacker keeps 40 idle sockets open to the webhook listener from 127.0.0.1, opening a new
    // one for each that closes; past its share of 16 they are closed as they arrive.
    const open = new Set<Socket>();
    let connected = 0;
    let attacking = true;
    const attack = () => {
      while (attacking && open.size < 40) {
        const socket = connect(webhookPort, "127.0.0.1");
        open.add(socket);
        socket.on("connect", () => connected++);
        socket.on("error", () => undefined);
        socket.on("close", () => {
          open.delete(socket);
          // Throttled a little, so the reconnecting does not starve the machine the test runs on.
          setTimeout(attack, 20);
        });
      }
    };
    attack();
    // Every connection the listener may hold would be the attacker's by now, were there no share.
    await until(
      () => connected,
      (n) => n >= 40,
      "the attacker's 40 connections",
    );
    const before = calls();
    const delivered = await deliver(
      messageEvent({ user: ALLOWED, channel: "C0CROWDED1", text: "still there?" }),
      { signingSecret: SECRET, localAddress: "127.0.0.2" },
    );
    expect(delivered.status).toBe(200);
    await until(
      () => postedTo("C0CROWDED1"),
      (p) => p.length > 0,
      "the reply to the delivery from 127.0.0.2",
    );
    expect(calls()).toBe(before + 1);
    attacking = false;
    // Idle sockets that never send a request are closed by the listener after idle_timeout_ms.
    await until(
      () => open.size,
      (n) => n === 0,
      "the listener to close the idle sockets",
    );
  });

  it("does not run an event again when it is redelivered after a restart", async () => {
    const event = messageEvent({ user: ALLOWED, channel: "C0AFTER001", text: "before the restart" });
    const first = await deliver(event);
    expect(first.status).toBe(200);
    await until(
      () => postedTo("C0AFTER001"),
      (p) => p.length > 0,
      "the reply before the restart",
    );
    const turns = () => llm.calls().filter((c) => c.last_user_text.includes("before the restart")).length;
    expect(turns()).toBe(1);
    const checked = () => slack.calls().filter((c) => c.method === "auth.test").length;
    const checks = checked();
    await daemon.stop();
    daemon = await startDaemon(home, port, { SLACK_BOT_TOKEN: slack.token, SLACK_SIGNING_SECRET: SECRET });
    await until(checked, (n) => n > checks, "auth.test after the restart");
    // Signed afresh (inside the 300 s window), the same event_id: Slack's retry, or a replay.
    const again = await deliver(event, { signingSecret: SECRET, eventId: first.eventId, retryNum: 3 });
    expect(again.status).toBe(200);
    expect(JSON.parse(again.body)).toMatchObject({ replay: true });
    await deliver(messageEvent({ user: ALLOWED, channel: "C0AFTER002", text: "after the restart" }));
    await until(
      () => postedTo("C0AFTER002"),
      (p) => p.length > 0,
      "the reply after the restart",
    );
    expect(turns()).toBe(1);
    expect(postedTo("C0AFTER001")).toHaveLength(1);
  });
});

describe("channel-slack when something is wrong", () => {
  let llm: FakeOpenAI;
  let slack: FakeSlack;
  const homes: string[] = [];

  beforeAll(async () => {
    llm = await startFakeOpenAI();
    slack = await startFakeSlack();
  });

  afterAll(async () => {
    await slack?.close();
    await llm?.close();
    for (const home of homes) removeHome(home);
  });

  it("keeps running with the refusal in status when Slack does not accept the token", async () => {
    const made = await slackHome(llm.url, `allowlist = ["${ALLOWED}"]\napi_root = "${slack.url}"`);
    homes.push(made.home);
    const daemon = await startDaemon(made.home, made.port, {
      SLACK_BOT_TOKEN: "xoxb-revoked-0000",
      SLACK_SIGNING_SECRET: SECRET,
    });
    try {
      const status = await until(
        () => daemon.request<{ connected: boolean; error?: string }>("GET", "/api/v1/channels/slack"),
        (res) => res.body.error !== undefined,
        "the refused token in status",
      );
      expect(status.status).toBe(200);
      expect(status.body.connected).toBe(false);
      expect(status.body.error).toContain("invalid_auth");
      expect(status.body.error).toContain("SLACK_BOT_TOKEN");
      expect(status.body.error).not.toContain("xoxb-revoked-0000");
      expect(daemon.process.exitCode).toBeNull();
    } finally {
      await daemon.stop();
    }
  }, 60_000);

  it("refuses to start without the signing secret, naming the variable", async () => {
    const made = await slackHome(llm.url, `allowlist = ["${ALLOWED}"]\napi_root = "${slack.url}"`);
    homes.push(made.home);
    const result = await runCli(made.home, ["start"], {
      SLACK_BOT_TOKEN: slack.token,
      OPENAI_API_KEY: "sk-test",
    });
    expect(result.code).not.toBe(0);
    const output = result.stdout + result.stderr;
    expect(output).toContain("CONFIG_INVALID");
    expect(output).toContain("SLACK_SIGNING_SECRET");
    expect(output).toContain("spar channel setup slack");
    expect(output).not.toContain(slack.token);
  }, 60_000);

  it("refuses an allowlist entry that is not a member id, saying what one looks like", async () => {
    const made = await slackHome(llm.url, `allowlist = ["@alice"]\napi_root = "${slack.url}"`);
    homes.push(made.home);
    const result = await runCli(made.home, ["start"], {
      SLACK_BOT_TOKEN: slack.token,
      SLACK_SIGNING_SECRET: SECRET,
      OPENAI_API_KEY: "sk-test",
    });
    expect(result.code).not.toBe(0);
    const output = result.stdout + result.stderr;
    expect(output).toContain("channels.slack.allowlist.0");
    expect(output).toContain("Copy member ID");
  }, 60_000);
});
