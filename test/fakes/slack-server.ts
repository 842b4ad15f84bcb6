// A stand-in for Slack on 127.0.0.1, both directions:
// - the Web API as @slack/web-api calls it: `POST /api/<method>`, the body form-encoded (or JSON),
//   the bot token in `Authorization: Bearer …`, every answer HTTP 200 with `{ok: true, …}` or
//   `{ok: false, error}` (`not_authed`, `invalid_auth`, `unknown_method`, and each method's own);
// - the Events API as Slack delivers it: an `event_callback` (or `url_verification`) envelope POSTed
//   as JSON to the app's Request URL, signed with the v0 HMAC over `v0:<timestamp>:<body>` keyed by
//   the signing secret, with `X-Slack-Retry-Num` / `X-Slack-Retry-Reason` on a retry.
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
      posted.push({ channel, text, ts });
      return {
        ok: true,
        channel,
        ts,
        message: { type: "message", text, user: SLACK_BOT.user_id, bot_id: SLACK_BOT.bot_id, ts },
      };
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
  ): Promise<SlackAnswer> {
    const body = JSON.stringify(payload);
    const timestamp = String(o.timestamp ?? Math.floor(Date.now() / 1000));
    const headers: Record<string, string> = {
      "content-type": "application/json",
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
