// A stand-in for Slack on 127.0.0.1, both directions:
// - the Web API as @slack/web-api calls it: `POST /api/<method>`, the body form-encoded (or JSON),
//   the bot token in `Authorization: Bearer …`, every answer HTTP 200 with `{ok: true, …}` or
//   `{ok: false, error}` (`not_authed`, `invalid_auth`, `unknown_method`, and each method's own);
// - the Events API as Slack delivers it: an `event_callback` (or `url_verification`) envelope POSTed
//   as JSON to the app's Request URL, signed with the v0 HMAC over `v0:<timestamp>:<body>` keyed by
//   the signing secret, with `X-Slack-Retry-Num` / `X-Slack-Retry-Reason` on a retry;
// - interactivity as Slack delivers it: a `block_actions` payload POSTed form-encoded
//   (`payload=<JSON>`) to the same URL, signed the same way (`press()`), and the Web API methods a
//   press leads to: chat.update (edits a posted message's text and blocks), chat.postEphemeral.
// The signature is computed here from Slack's documented recipe, not with the code under test.
import { createHmac, randomBytes } from "node:crypto";
import { request } from "node:http";
import { sendJson, startFakeHttp } from "./http-fake.js";

/** The workspace and bot the fake pretends to be (what auth.test answers). */
export const SLACK_TEAM = { id: "T0SPARTEAM", name: "Spar Test", domain: "spar-test" } as const;
export const SLACK_BOT = {
  user_id: "U0SPARBOT1",
  bot_id: "B0SPARBOT1",
  user: "spar",
  app_id: "A0SPARAPP1",
} as const;

/** One Web API call as the fake received it. */
export interface SlackApiCall {
  method: string;
  /** Whether the bearer token was the fake's bot token. */
  authorized: boolean;
  params: Record<string, unknown>;
}

/** A message chat.postMessage accepted. */
export interface SlackPosted {
  channel: string;
  text: string;
  ts: string;
  /** The Block Kit blocks, as sent (or as chat.update left them). */
  blocks?: SlackBlock[];
}

/** A Block Kit block, as far as the fake reads it. */
export interface SlackBlock {
  type: string;
  block_id?: string;
  text?: { type: string; text: string };
  elements?: { type: string; action_id?: string; value?: string; text?: { text: string } }[];
}

/** A chat.postEphemeral call: what one member alone was shown. */
export interface SlackEphemeral {
  channel: string;
  user: string;
  text: string;
}

/** A Slack `message` event (the `event` of an `event_callback`). */
export interface SlackMessageEvent {
  type: "message";
  channel: string;
  user?: string;
  text?: string;
  ts: string;
  event_ts?: string;
  channel_type?: string;
  subtype?: string;
  bot_id?: string;
  [key: string]: unknown;
}

export interface DeliverOptions {
  signingSecret: string;
  /** Unix seconds the delivery is signed at (default now); an old one tests the 300 s window. */
  timestamp?: number;
  /** Sign with the wrong secret: what a forger without the signing secret can do. */
  forge?: boolean;
  /** The envelope's `event_id` (default a fresh `Ev…`); a redelivery reuses it. */
  eventId?: string;
  /** Deliver as Slack's retry number `n` (`X-Slack-Retry-Num`, reason `http_timeout`). */
  retryNum?: number;
  /**
   * Send from this loopback address (127.0.0.2 …) on a new connection, never a kept-alive one: a
   * peer other than the test's own 127.0.0.1.
   */
  localAddress?: string;
}

/** The webhook's answer to a delivery. */
export interface SlackAnswer {
  status: number;
  body: string;
  headers: Headers;
}

export interface FakeSlack {
  /** The API root to configure (`api_root`): the Web API is at `${url}/api/`. */
  readonly url: string;
  /** The bot token the fake accepts (`xoxb-…`); any other is `invalid_auth`. */
  readonly token: string;
  /** Every Web API call, in order. */
  calls(): SlackApiCall[];
  posted(): SlackPosted[];
  /** chat.postEphemeral calls, in order. */
  ephemerals(): SlackEphemeral[];
  /** reactions.add / reactions.remove calls that succeeded, and the reactions still on messages. */
  reactions(): {
    added: number;
    removed: number;
    present: { channel: string; timestamp: string; name: string }[];
  };
  /** POSTs `event` in an `event_callback` envelope to `url`, signed as Slack signs it. */
  deliver(
    url: string,
    event: SlackMessageEvent,
    options: DeliverOptions,
  ): Promise<SlackAnswer & { eventId: string }>;
  /**
   * POSTs a `block_actions` payload, form-encoded as Slack sends interactivity: `user` pressed the
   * button `action_id` of the posted `message` (its value as the message's blocks hold it).
   */
  press(
    url: string,
    press: { user: string; message: SlackPosted; action_id: string },
    options: Omit<DeliverOptions, "eventId" | "retryNum">,
  ): Promise<SlackAnswer>;
  /** POSTs a `url_verification` request (what Slack sends when the Request URL is saved). */
  challenge(
    url: string,
    options: Omit<DeliverOptions, "eventId" | "retryNum">,
  ): Promise<SlackAnswer & { challenge: string }>;
  close(): Promise<void>;
}

/** A plain user message in `channel`, as Slack sends it (`ts` fresh unless given). */
export function messageEvent(options: {
  user: string;
  channel: string;
  text: string;
  ts?: string;
  extra?: Partial<SlackMessageEvent>;
}): SlackMessageEvent {
  const ts = options.ts ?? nextTs();
  return {
    type: "message",
    channel: options.channel,
    user: options.user,
    text: options.text,
    ts,
    event_ts: ts,
    team: SLACK_TEAM.id,
    channel_type: options.channel.startsWith("D") ? "im" : "channel",
    ...options.extra,
  };
}

let tsCounter = 0;
/** Slack's message timestamps: seconds, a dot, six digits, unique per channel. */
function nextTs(): string {
  tsCounter += 1;
  return `${Math.floor(Date.now() / 1000)}.${String(tsCounter).padStart(6, "0")}`;
}

/** Slack's v0 request signature. */
function sign(secret: string, timestamp: string, body: string): string {
  return `v0=${createHmac("sha256", secret).update(`v0:${timestamp}:${body}`).digest("hex")}`;
}

/** The request's parameters: form-encoded (what web-api sends) or JSON. */
function params(contentType: string, body: string): Record<string, unknown> {
  if (/json/i.test(contentType)) {
    try {
      const parsed: unknown = JSON.parse(body || "{}");
      return typeof parsed === "object" && parsed !== null ? (parsed as Record<string, unknown>) : {};
    } catch {
      return {};
    }
  }
  return Object.fromEntries(new URLSearchParams(body));
}

/** Slack's hard limit on a message's text. */
const MAX_TEXT = 40_000;

export async function startFakeSlack(options: { token?: string } = {}): Promise<FakeSlack> {
  const token = options.token ?? `xoxb-1-${randomBytes(12).toString("hex")}`;
  const calls: SlackApiCall[] = [];
  const posted: SlackPosted[] = [];
  const ephemerals: SlackEphemeral[] = [];
  const present = new Map<string, { channel: string; timestamp: string; name: string }>();
  const counts = { added: 0, removed: 0 };

  /** Each method's answer to an authorized call. */
  const methods: Record<string, (p: Record<string, unknown>) => Record<string, unknown>> = {
    "auth.test": () => ({
      ok: true,
      url: `https://${SLACK_TEAM.domain}.slack.com/`,
      team: SLACK_TEAM.name,
      user: SLACK_BOT.user,
      team_id: SLACK_TEAM.id,
      user_id: SLACK_BOT.user_id,
      bot_id: SLACK_BOT.bot_id,
      is_enterprise_install: false,
    }),
    "chat.postMessage": (p) => {
      const channel = typeof p.channel === "string" ? p.channel : "";
      const text = typeof p.text === "string" ? p.text : "";
      if (!channel) return { ok: false, error: "channel_not_found" };
      if (!text && p.blocks === undefined) return { ok: false, error: "no_text" };
      if (text.length > MAX_TEXT) return { ok: false, error: "msg_too_long" };
      const ts = nextTs();
      const blocks = blocksOf(p.blocks);
      posted.push({ channel, text, ts, ...(blocks ? { blocks } : {}) });
      return {
        ok: true,
        channel,
        ts,
        message: { type: "message", text, user: SLACK_BOT.user_id, bot_id: SLACK_BOT.bot_id, ts },
      };
    },
    "chat.update": (p) => {
      const message = posted.find((m) => m.channel === p.channel && m.ts === p.ts);
      if (!message) return { ok: false, error: "message_not_found" };
      const text = typeof p.text === "string" ? p.text : "";
      if (text.length > MAX_TEXT) return { ok: false, error: "msg_too_long" };
      message.text = text;
      const blocks = blocksOf(p.blocks);
      if (blocks) message.blocks = blocks;
      else delete message.blocks;
      return { ok: true, channel: message.channel, ts: message.ts, text };
    },
    "chat.postEphemeral": (p) => {
      const { channel, user, text } = p;
      if (typeof channel !== "string" || typeof user !== "string" || typeof text !== "string" || !text)
        return { ok: false, error: "invalid_arguments" };
      ephemerals.push({ channel, user, text });
      return { ok: true, message_ts: nextTs() };
    },
    "reactions.add": (p) => {
      const reaction = reactionOf(p);
      if (!reaction) return { ok: false, error: "invalid_arguments" };
      const key = `${reaction.channel}/${reaction.timestamp}/${reaction.name}`;
      if (present.has(key)) return { ok: false, error: "already_reacted" };
      present.set(key, reaction);
      counts.added += 1;
      return { ok: true };
    },
    "reactions.remove": (p) => {
      const reaction = reactionOf(p);
      if (!reaction) return { ok: false, error: "invalid_arguments" };
      if (!present.delete(`${reaction.channel}/${reaction.timestamp}/${reaction.name}`))
        return { ok: false, error: "no_reaction" };
      counts.removed += 1;
      return { ok: true };
    },
  };

  const http = await startFakeHttp(async (req, res, body) => {
    const path = (req.url ?? "").split("?")[0] ?? "";
    const method = /^\/api\/([a-zA-Z.]+)$/.exec(path)?.[1];
    if (req.method !== "POST" || !method) return sendJson(res, 404, { ok: false, error: "not_found" });
    const p = params(String(req.headers["content-type"] ?? ""), body);
    const bearer = /^Bearer (.+)$/.exec(String(req.headers.authorization ?? ""))?.[1] ?? p.token;
    const authorized = bearer === token;
    calls.push({
      method,
      authorized,
      params: Object.fromEntries(Object.entries(p).filter(([k]) => k !== "token")),
    });
    const handler = methods[method];
    if (!handler) return sendJson(res, 200, { ok: false, error: "unknown_method" });
    if (bearer === undefined || bearer === "") return sendJson(res, 200, { ok: false, error: "not_authed" });
    if (!authorized) return sendJson(res, 200, { ok: false, error: "invalid_auth" });
    sendJson(res, 200, handler(p));
  });

  async function post(
    url: string,
    payload: Record<string, unknown>,
    o: DeliverOptions,
    form = false,
  ): Promise<SlackAnswer> {
    const body = form
      ? new URLSearchParams({ payload: JSON.stringify(payload) }).toString()
      : JSON.stringify(payload);
    const timestamp = String(o.timestamp ?? Math.floor(Date.now() / 1000));
    const headers: Record<string, string> = {
      "content-type": form ? "application/x-www-form-urlencoded" : "application/json",
      "user-agent": "Slackbot 1.0 (+https://api.slack.com/robots)",
      "x-slack-request-timestamp": timestamp,
      "x-slack-signature": sign(o.forge ? `not-${o.signingSecret}` : o.signingSecret, timestamp, body),
    };
    if (o.retryNum !== undefined) {
      headers["x-slack-retry-num"] = String(o.retryNum);
      headers["x-slack-retry-reason"] = "http_timeout";
    }
    if (o.localAddress !== undefined) return postFrom(o.localAddress, url, headers, body);
    const response = await fetch(url, { method: "POST", headers, body });
    return { status: response.status, body: await response.text(), headers: response.headers };
  }

  return {
    url: `http://127.0.0.1:${http.port}`,
    token,
    calls: () => calls,
    posted: () => posted,
    ephemerals: () => ephemerals,
    async press(url, pressed, o) {
      const button = pressed.message.blocks
        ?.flatMap((b) => b.elements ?? [])
        .find((e) => e.action_id === pressed.action_id);
      const payload = {
        type: "block_actions",
        user: { id: pressed.user, username: `user-${pressed.user}`, team_id: SLACK_TEAM.id },
        api_app_id: SLACK_BOT.app_id,
        token: "legacy-verification-token",
        container: {
          type: "message",
          message_ts: pressed.message.ts,
          channel_id: pressed.message.channel,
          is_ephemeral: false,
        },
        trigger_id: `${Date.now()}.${randomBytes(6).toString("hex")}`,
        team: { id: SLACK_TEAM.id, domain: SLACK_TEAM.domain },
        channel: { id: pressed.message.channel, name: "general" },
        message: {
          type: "message",
          user: SLACK_BOT.user_id,
          bot_id: SLACK_BOT.bot_id,
          ts: pressed.message.ts,
          text: pressed.message.text,
          blocks: pressed.message.blocks ?? [],
        },
        response_url: "https://hooks.slack.invalid/actions/T0/1/x",
        actions: [
          {
            type: "button",
            action_id: pressed.action_id,
            block_id: "spar_approval",
            value: button?.value ?? "",
            text: { type: "plain_text", text: button?.text?.text ?? "" },
            action_ts: `${Date.now() / 1000}`,
          },
        ],
      };
      return post(url, payload, o, true);
    },
    reactions: () => ({ ...counts, present: [...present.values()] }),
    async deliver(url, event, o) {
      const eventId = o.eventId ?? `Ev${randomBytes(5).toString("hex").toUpperCase()}`;
      const envelope = {
        token: "legacy-verification-token",
        team_id: SLACK_TEAM.id,
        api_app_id: SLACK_BOT.app_id,
        event,
        type: "event_callback",
        event_id: eventId,
        event_time: Math.floor(Date.now() / 1000),
        authorizations: [
          {
            enterprise_id: null,
            team_id: SLACK_TEAM.id,
            user_id: SLACK_BOT.user_id,
            is_bot: true,
            is_enterprise_install: false,
          },
        ],
        is_ext_shared_channel: false,
        event_context: `4-${randomBytes(8).toString("hex")}`,
      };
      return { ...(await post(url, envelope, o)), eventId };
    },
    async challenge(url, o) {
      const challenge = randomBytes(16).toString("hex");
      const payload = { token: "legacy-verification-token", challenge, type: "url_verification" };
      return { ...(await post(url, payload, o)), challenge };
    },
    close: () => http.close(),
  };
}

/** The blocks a Web API call carries: JSON in a form field, or already an array. */
function blocksOf(value: unknown): SlackBlock[] | undefined {
  const blocks = typeof value === "string" ? (JSON.parse(value) as unknown) : value;
  return Array.isArray(blocks) && blocks.length > 0 ? (blocks as SlackBlock[]) : undefined;
}

function reactionOf(
  p: Record<string, unknown>,
): { channel: string; timestamp: string; name: string } | undefined {
  const { channel, timestamp, name } = p;
  return typeof channel === "string" && typeof timestamp === "string" && typeof name === "string"
    ? { channel, timestamp, name }
    : undefined;
}

/** A POST on its own connection from `localAddress` (fetch cannot choose the address it sends from). */
function postFrom(
  localAddress: string,
  url: string,
  headers: Record<string, string>,
  body: string,
): Promise<SlackAnswer> {
  return new Promise((done, fail) => {
    const req = request(url, { method: "POST", headers, localAddress, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => {
        const answer = new Headers();
        for (const [name, value] of Object.entries(res.headers)) {
          if (typeof value === "string") answer.set(name, value);
        }
        done({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8"), headers: answer });
      });
    });
    req.on("error", fail);
    req.end(body);
  });
}
