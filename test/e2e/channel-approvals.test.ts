/**
 * Approve / Deny buttons in the chat a turn came from (issue 30, part D), on the real daemon with
 * the real sandbox, the model a scripted fake, and the Telegram Bot API, Slack and Discord fakes on
 * 127.0.0.1. A channel message makes the model call shell_exec; the request is posted to that chat
 * with its buttons (an inline keyboard, a Block Kit actions block, a components row); a stranger's
 * press is refused, logged and changes nothing; the answerer's press approves, the command runs
 * exactly once (a file it appends to counts it), the message shows the outcome; a second press says
 * "already"; a deny returns the refusal to the model, which answers without the command. Last, a
 * chat's turn left waiting by kill -9 is taken up after the restart by a press on the old prompt, and
 * its reply reaches the chat.
 */
import { existsSync, readFileSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeDiscord, type FakePost, startFakeDiscord } from "../fakes/discord-server.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import { type FakeSlack, messageEvent, type SlackPosted, startFakeSlack } from "../fakes/slack-server.js";
import {
  type FakeTelegram,
  pressUpdate,
  type SentMessage,
  startFakeTelegram,
  textUpdate,
} from "../fakes/telegram-server.js";
import {
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";

/** The Telegram channel's owner; ALLOWED is on the allowlist but is not an owner. */
const OWNER = 424242;
const ALLOWED = 515151;
const OUTSIDER = 999999;
const SLACK_MEMBER = "U0ALLOWED1";
const SLACK_STRANGER = "U0STRANGE1";
const DISCORD_OWNER = "300000000000000001";
const DISCORD_STRANGER = "300000000000000009";
const TELEGRAM_SECRET = "approvals-webhook-secret-0123456789";
const SLACK_SECRET = "slack-signing-secret-for-approvals";

interface Approval {
  id: string;
  status: string;
  origin: string;
  move: string;
  answered_by?: string;
  released_at?: string;
}

async function eventually<T>(
  probe: () => T | Promise<T>,
  test: (value: T) => boolean,
  what: string,
): Promise<T> {
  for (let i = 0; i < 400; i++) {
    const value = await probe();
    if (test(value)) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe("approvals answered from the chat", () => {
  let fake: FakeOpenAI;
  let telegram: FakeTelegram;
  let slack: FakeSlack;
  let discord: FakeDiscord;
  let home: string;
  let daemon: TestDaemon;
  let daemonPort: number;
  let daemonEnv: NodeJS.ProcessEnv;
  let webhookPort: number;
  let workspace: string;
  let nextUpdate = 1;

  const appendRan = { argv: ["/bin/sh", "-c", "echo ran >> ran.txt"] };
  const ran = () => {
    const file = join(workspace, "ran.txt");
    return existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean).length : 0;
  };
  const lastToolResult = () => JSON.parse(fake.calls().at(-1)?.tool_results.at(-1) ?? "null");
  const approval = async (id: string) =>
    (await daemon.request<Approval>("GET", `/api/v1/approvals/${id}`)).body;
  const webhook = (path: string) => `http://127.0.0.1:${webhookPort}${path}`;

  beforeAll(async () => {
    [fake, telegram, slack, discord] = await Promise.all([
      startFakeOpenAI(),
      startFakeTelegram(),
      startFakeSlack(),
      startFakeDiscord(),
    ]);
    home = tempHome();
    const port = await freePort();
    webhookPort = await freePort();
    writeConfig(
      home,
      port,
      fake.url,
      `\n[agent]\ntool_timeout_s = 30\n[creed]\nreflect = false\n[approvals]\ntimeout_s = 120\n\n` +
        `[channels]\nwebhook_listen = "127.0.0.1:${webhookPort}"\n\n` +
        `[channels.telegram]\napi_root = "${telegram.url}"\nallowlist = [${OWNER}, ${ALLOWED}]\nowners = [${OWNER}]\n\n` +
        `[channels.slack]\napi_root = "${slack.url}"\nallowlist = ["${SLACK_MEMBER}"]\n\n` +
        `[channels.discord]\napi_root = "${discord.url}"\nallowlist = ["${DISCORD_OWNER}", "${DISCORD_STRANGER}"]\nowners = ["${DISCORD_OWNER}"]\n\n` +
        `[tunnel]\nmode = "manual"\nurl = "http://127.0.0.1:${webhookPort}"\n`,
    );
    daemonPort = port;
    daemonEnv = {
      TELEGRAM_BOT_TOKEN: telegram.token,
      TELEGRAM_WEBHOOK_SECRET: TELEGRAM_SECRET,
      SLACK_BOT_TOKEN: slack.token,
      SLACK_SIGNING_SECRET: SLACK_SECRET,
      DISCORD_BOT_TOKEN: discord.token,
      DISCORD_PUBLIC_KEY: discord.publicKey,
    };
    daemon = await startDaemon(home, port, daemonEnv);
    workspace = join(realpathSync(home), "workspaces", "spar");
    await eventually(
      () => telegram.webhook()?.url,
      (url) => url === webhook("/telegram"),
      "setWebhook",
    );
    await discord.sessionReady();
    await discord.endpointSet();
  }, 90_000);

  afterAll(async () => {
    await daemon?.stop();
    await Promise.all([telegram?.close(), slack?.close(), discord?.close(), fake?.close()]);
    if (home) removeHome(home);
  });

  describe("Telegram", () => {
    const say = (from: number, text: string) =>
      telegram.deliver(textUpdate({ update_id: nextUpdate++, from, chat: from, text }));
    const press = (from: number, message: SentMessage, data: string) =>
      telegram.deliver(pressUpdate({ update_id: nextUpdate++, from, message, data }));
    const prompts = () =>
      telegram.sent().filter((m) => m.chat_id === String(OWNER) && m.text.startsWith("Approval needed"));
    const toasts = () => telegram.callbackAnswers().map((a) => a.text);
    const replies = () =>
      telegram.sent().filter((m) => m.chat_id === String(OWNER) && m.text.startsWith("done: "));
    let approveData: string;
    let prompt: SentMessage;
    let requestId: string;

    it("posts the waiting call to the chat it came from, with an inline keyboard", async () => {
      fake.reset();
      fake.enqueue({ tool_calls: [{ name: "shell_exec", arguments: appendRan }] });
      expect(await say(OWNER, "count once")).toBe(200);
      prompt = (await eventually(
        () => prompts()[0],
        (m) => m !== undefined,
        "the prompt",
      )) as SentMessage;
      expect(telegram.calls.find((c) => c.method === "setWebhook")?.payload.allowed_updates).toEqual([
        "message",
        "callback_query",
      ]);
      const [buttons] = prompt.reply_markup?.inline_keyboard ?? [];
      expect(buttons?.map((b) => b.text)).toEqual(["Approve", "Deny"]);
      requestId = prompt.text.match(/Request: (\S+)/)?.[1] ?? "";
      approveData = `spar:a:${requestId}`;
      expect(buttons?.map((b) => b.callback_data)).toEqual([approveData, `spar:d:${requestId}`]);
      for (const b of buttons ?? []) expect(Buffer.byteLength(b.callback_data ?? "")).toBeLessThanOrEqual(64);
      expect(prompt.text).toContain("spar wants to run shell_exec");
      expect(prompt.text).toContain("/bin/sh -c echo ran >> ran.txt");
      expect(prompt.text).toContain("Why: shell_exec runs a program (the default: ask)");
      expect(prompt.text).toMatch(/Expires: \d{4}-\d\d-\d\d \d\d:\d\d UTC/);
      expect(await approval(requestId)).toMatchObject({
        status: "pending",
        origin: `channel:telegram:${OWNER}`,
        move: "shell_exec",
      });
      expect(ran()).toBe(0);
    });

    it("refuses a press from anyone but the owners: told so, logged, nothing changes", async () => {
      for (const stranger of [ALLOWED, OUTSIDER]) {
        expect(await press(stranger, prompt, approveData)).toBe(200);
      }
      await eventually(
        toasts,
        (t) => t.filter((x) => x?.startsWith("Not allowed")).length === 2,
        "two refusals",
      );
      await eventually(
        () => daemon.output(),
        (out) => out.includes("approval.refused") && out.includes(String(OUTSIDER)),
        "the refusal in the log",
      );
      expect(daemon.output()).toMatch(/approval\.refused.*sender="515151"/);
      expect(await approval(requestId)).toMatchObject({ status: "pending" });
      expect(ran()).toBe(0);
      expect(fake.calls()).toHaveLength(1);
    });

    it("runs the command exactly once when the owner approves, and shows it in the message", async () => {
      expect(await press(OWNER, prompt, approveData)).toBe(200);
      await eventually(replies, (r) => r.length === 1, "the fighter's reply");
      expect(ran()).toBe(1);
      expect(fake.calls()).toHaveLength(2);
      expect(lastToolResult()).toMatchObject({ exit_code: 0 });
      expect(await approval(requestId)).toMatchObject({
        status: "approved",
        answered_by: `channel:telegram:${OWNER}`,
        released_at: expect.any(String),
      });
      expect(toasts()).toContain("Approved: it runs now.");
      const edited = telegram.sent().find((m) => m.message_id === prompt.message_id);
      expect(edited?.text.endsWith(`Approved by channel:telegram:${OWNER}.`)).toBe(true);
      expect(edited?.reply_markup).toBeUndefined();
    });

    it("answers a second press 'already approved', and runs nothing again", async () => {
      expect(await press(OWNER, prompt, approveData)).toBe(200);
      await eventually(toasts, (t) => t.includes("Already approved: nothing changed."), "the second toast");
      await new Promise((r) => setTimeout(r, 300));
      expect(ran()).toBe(1);
      expect(fake.calls()).toHaveLength(2);
    });

    it("returns a deny to the model, which answers without the command", async () => {
      fake.reset();
      fake.enqueue({ tool_calls: [{ name: "shell_exec", arguments: appendRan }] });
      expect(await say(OWNER, "count again")).toBe(200);
      const second = (await eventually(
        () => prompts()[1],
        (m) => m !== undefined,
        "the second prompt",
      )) as SentMessage;
      const id = second.text.match(/Request: (\S+)/)?.[1] ?? "";
      expect(await press(OWNER, second, `spar:d:${id}`)).toBe(200);
      await eventually(replies, (r) => r.length === 2, "the reply after the deny");
      expect(lastToolResult().error).toMatchObject({
        code: "APPROVAL_DENIED",
        message: expect.stringContaining("the operator denied shell_exec"),
      });
      expect(fake.calls()).toHaveLength(2);
      expect(ran()).toBe(1);
      expect(await approval(id)).toMatchObject({
        status: "denied",
        answered_by: `channel:telegram:${OWNER}`,
      });
      expect(telegram.sent().find((m) => m.message_id === second.message_id)?.text).toMatch(
        /Denied by channel:telegram:424242\.$/,
      );
    });

    it("edits the message when the request is answered elsewhere (the API)", async () => {
      fake.reset();
      fake.enqueue({ tool_calls: [{ name: "shell_exec", arguments: appendRan }] });
      await say(OWNER, "count by API");
      const third = (await eventually(
        () => prompts()[2],
        (m) => m !== undefined,
        "the third prompt",
      )) as SentMessage;
      const id = third.text.match(/Request: (\S+)/)?.[1] ?? "";
      expect((await daemon.request("POST", `/api/v1/approvals/${id}/approve`, {})).status).toBe(200);
      await eventually(replies, (r) => r.length === 3, "the reply");
      expect(ran()).toBe(2);
      await eventually(
        () => telegram.sent().find((m) => m.message_id === third.message_id),
        (m) => m?.reply_markup === undefined && /\n\nApproved by /.test(m?.text ?? ""),
        "the edited prompt",
      );
    });
  });

  describe("Slack", () => {
    const events = () => webhook("/slack/events");
    const prompts = () =>
      slack.posted().filter((m) => m.channel === "C0APPROVE1" && m.blocks?.some((b) => b.type === "actions"));

    it("posts Block Kit buttons; refuses a stranger's press; the allowlisted member's approves, once", async () => {
      fake.reset();
      fake.enqueue({ tool_calls: [{ name: "shell_exec", arguments: appendRan }] });
      const before = ran();
      const delivered = await slack.deliver(
        events(),
        messageEvent({ user: SLACK_MEMBER, channel: "C0APPROVE1", text: "count on slack" }),
        { signingSecret: SLACK_SECRET },
      );
      expect(delivered.status).toBe(200);
      // As first posted, buttons and all: the second press below is a member's double click.
      const prompt = structuredClone(
        (await eventually(
          () => prompts()[0],
          (m) => m !== undefined,
          "the prompt",
        )) as SlackPosted,
      );
      const actions = prompt.blocks?.find((b) => b.type === "actions");
      expect(actions?.elements?.map((e) => e.action_id)).toEqual(["spar_approve", "spar_deny"]);
      // No owners configured: the turn is a stranger's content, and the prompt says so.
      expect(prompt.text).toContain("Read before asking: channel slack:C0APPROVE1:U0ALLOWED1");
      const id = prompt.text.match(/Request: (\S+)/)?.[1] ?? "";

      const forged = await slack.press(
        events(),
        { user: SLACK_MEMBER, message: prompt, action_id: "spar_approve" },
        {
          signingSecret: SLACK_SECRET,
          forge: true,
        },
      );
      expect(forged.status).toBe(401);
      const stranger = await slack.press(
        events(),
        { user: SLACK_STRANGER, message: prompt, action_id: "spar_approve" },
        {
          signingSecret: SLACK_SECRET,
        },
      );
      expect(stranger.status).toBe(200);
      await eventually(
        () => slack.ephemerals(),
        (e) => e.some((x) => x.user === SLACK_STRANGER && x.text.startsWith("Not allowed")),
        "the stranger told",
      );
      expect(daemon.output()).toMatch(/approval\.refused.*platform="slack".*sender="U0STRANGE1"/);
      expect(await approval(id)).toMatchObject({ status: "pending", origin: "channel:slack:C0APPROVE1" });
      expect(ran()).toBe(before);

      const approved = await slack.press(
        events(),
        { user: SLACK_MEMBER, message: prompt, action_id: "spar_approve" },
        {
          signingSecret: SLACK_SECRET,
        },
      );
      expect(approved.status).toBe(200);
      await eventually(
        () => slack.posted().filter((m) => m.channel === "C0APPROVE1" && m.text.startsWith("done: ")),
        (r) => r.length === 1,
        "the reply",
      );
      expect(ran()).toBe(before + 1);
      expect(await approval(id)).toMatchObject({
        status: "approved",
        answered_by: `channel:slack:${SLACK_MEMBER}`,
      });
      const updated = slack.posted().find((m) => m.ts === prompt.ts);
      expect(updated?.text.endsWith(`Approved by channel:slack:${SLACK_MEMBER}.`)).toBe(true);
      expect(updated?.blocks?.some((b) => b.type === "actions")).toBe(false);

      await slack.press(
        events(),
        { user: SLACK_MEMBER, message: prompt, action_id: "spar_approve" },
        { signingSecret: SLACK_SECRET },
      );
      await eventually(
        () => slack.ephemerals(),
        (e) => e.some((x) => x.user === SLACK_MEMBER && x.text === "Already approved: nothing changed."),
        "already",
      );
      expect(ran()).toBe(before + 1);
    });
  });

  describe("Discord", () => {
    it("posts a components row; refuses a stranger's press; the owner's approves with UPDATE_MESSAGE", async () => {
      const endpoint = webhook("/discord/interactions");
      const room = discord.channel();
      fake.reset();
      fake.enqueue({ tool_calls: [{ name: "shell_exec", arguments: appendRan }] });
      const before = ran();
      await discord.message({ channel: room, author: DISCORD_OWNER, content: "count on discord" });
      const prompt = (await eventually(
        () => discord.posts().find((p) => p.channel === room && Array.isArray(p.body.components)),
        (p) => p !== undefined,
        "the prompt",
      )) as FakePost;
      const row = (
        prompt.body.components as { components: { type: number; custom_id: string; label: string }[] }[]
      )[0];
      const id = prompt.content.match(/Request: (\S+)/)?.[1] ?? "";
      expect(row?.components.map((c) => [c.type, c.label, c.custom_id])).toEqual([
        [2, "Approve", `spar:a:${id}`],
        [2, "Deny", `spar:d:${id}`],
      ]);

      const stranger = await discord.interact(
        endpoint,
        discord.button({ user: DISCORD_STRANGER, message: prompt, custom_id: `spar:a:${id}` }),
      );
      expect(stranger).toMatchObject({
        status: 200,
        body: { type: 4, data: { flags: 64, content: expect.stringMatching(/^Not allowed/) } },
      });
      expect(daemon.output()).toMatch(/approval\.refused.*platform="discord".*sender="300000000000000009"/);
      expect(await approval(id)).toMatchObject({ status: "pending", origin: `channel:discord:${room}` });
      expect(ran()).toBe(before);

      const approved = await discord.interact(
        endpoint,
        discord.button({ user: DISCORD_OWNER, message: prompt, custom_id: `spar:a:${id}` }),
      );
      expect(approved.status).toBe(200);
      expect(approved.body).toMatchObject({
        type: 7,
        data: {
          components: [],
          content: expect.stringMatching(/\n\nApproved by channel:discord:300000000000000001\.$/),
        },
      });
      await eventually(
        () => discord.posts().filter((p) => p.channel === room && p.content.startsWith("done: ")),
        (r) => r.length === 1,
        "the reply",
      );
      expect(ran()).toBe(before + 1);
      expect(await approval(id)).toMatchObject({
        status: "approved",
        answered_by: `channel:discord:${DISCORD_OWNER}`,
      });

      const again = await discord.interact(
        endpoint,
        discord.button({ user: DISCORD_OWNER, message: prompt, custom_id: `spar:a:${id}` }),
      );
      expect(again.body).toMatchObject({ type: 4, data: { content: "Already approved: nothing changed." } });
      expect(ran()).toBe(before + 1);
    });
  });

  // Last: it restarts the daemon. A turn a chat started waits; kill -9; after the restart the owner
  // presses the prompt posted before it, the turn is taken up from its stored steps, the command runs
  // once, no model call is repeated, and the reply goes back to that chat.
  describe("across kill -9", () => {
    it("takes the chat's waiting turn up again when the owner presses after a restart, and replies in the chat", async () => {
      const say = (text: string) =>
        telegram.deliver(textUpdate({ update_id: nextUpdate++, from: OWNER, chat: OWNER, text }));
      const prompts = () =>
        telegram.sent().filter((m) => m.chat_id === String(OWNER) && m.text.startsWith("Approval needed"));
      const replies = () =>
        telegram.sent().filter((m) => m.chat_id === String(OWNER) && m.text === "done: after the restart");
      const before = ran();
      const asked = prompts().length;
      fake.reset();
      fake.enqueue({ tool_calls: [{ name: "shell_exec", arguments: appendRan }] });
      fake.enqueue({ text: "done: after the restart" });
      expect(await say("count across a restart")).toBe(200);
      const prompt = (await eventually(
        () => prompts()[asked],
        (m) => m !== undefined,
        "the prompt",
      )) as SentMessage;
      const id = prompt.text.match(/Request: (\S+)/)?.[1] ?? "";
      await eventually(
        async () => (await daemon.request<{ status: string }>("GET", "/api/v1/fighters/spar")).body.status,
        (status) => status === "awaiting_approval",
        "the fighter awaiting approval",
      );

      daemon.process.kill("SIGKILL");
      await daemon.stop();
      daemon = await startDaemon(home, daemonPort, daemonEnv);
      expect(await approval(id)).toMatchObject({ status: "pending" });
      await eventually(
        async () => (await daemon.request<{ status: string }>("GET", "/api/v1/fighters/spar")).body.status,
        (status) => status === "awaiting_approval",
        "the fighter still awaiting approval after the restart",
      );

      expect(
        await telegram.deliver(
          pressUpdate({ update_id: nextUpdate++, from: OWNER, message: prompt, data: `spar:a:${id}` }),
        ),
      ).toBe(200);
      await eventually(replies, (r) => r.length === 1, "the reply in the chat after the restart");
      expect(ran()).toBe(before + 1);
      // The call that asked, then the answer after it: none repeated across the restart.
      expect(fake.calls()).toHaveLength(2);
      expect(await approval(id)).toMatchObject({
        status: "approved",
        answered_by: `channel:telegram:${OWNER}`,
        released_at: expect.any(String),
      });
      await new Promise((r) => setTimeout(r, 300));
      expect(ran()).toBe(before + 1);
      expect(replies()).toHaveLength(1);
    });
  });
});
