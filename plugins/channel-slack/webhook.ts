/**
 * The Slack Events API webhook on the webhook listener (the app's Request URL). `verify` checks the
 * v0 signature over the body as received, with Slack's 300 s window, before anything parses it (a
 * refusal is counted and answered 401 by the Arena). Slack wants an answer within 3 s, so the handler
 * answers at once and the turn runs after the answer:
 * - `url_verification`: the challenge, echoed (only ever reached with a valid signature);
 * - an interactivity payload (form-encoded, the app's Interactivity Request URL, which is this same
 *   URL): a press of an Approve / Deny button, answered 200 at once and handled after (approvals.ts);
 * - not a plain message from a member (edits, deletions, bot posts, other events): 200, ignored;
 * - an event already seen: 200, nothing done. Slack redelivers an event it thinks was lost, with the
 *   same `event_id` and an `X-Slack-Retry-Num` header, so a retry of a processed event is a replay;
 * - a member not on the allowlist: 403 with `X-Slack-No-Retry: 1` (no retries of a refusal), no model call;
 * - a member over `rate_per_minute`: 200 (an error would only make Slack retry it, and count against
 *   the app), the message dropped, and a short notice in the chat at most once a minute per member.
 */

import type { Logger, PluginRoute, RouteResponse } from "../../sdk/index.js";
import { SparError } from "../../sdk/index.js";
import { type ChannelGate, type ChannelRelay, slackDeliveryOk } from "../../sdk/kits/channels.js";
import { readPress, type SlackPress } from "./approvals.js";
import { readDelivery } from "./delivery.js";

/** Slack's redelivery of an event: which attempt, and why Slack thinks the last one failed. */
export interface SlackRetry {
  num: number;
  reason?: string;
}

/** What a member over the rate limit reads (once a minute at most). */
export const RATE_NOTICE =
  "You are sending messages faster than I can take them; I skipped the last one. Try again in a minute.";

function header(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const value = headers[name];
  return typeof value === "string" ? value : undefined;
}

/** The `X-Slack-Retry-Num` / `X-Slack-Retry-Reason` headers, when this delivery is a retry. */
export function retryOf(headers: Record<string, string | string[] | undefined>): SlackRetry | undefined {
  const num = header(headers, "x-slack-retry-num");
  if (num === undefined || !/^\d{1,3}$/.test(num)) return undefined;
  const reason = header(headers, "x-slack-retry-reason");
  return { num: Number(num), ...(reason ? { reason: reason.slice(0, 100) } : {}) };
}

/** The webhook route for `path`, checking deliveries against `signingSecret`. */
export function slackWebhook(options: {
  path: string;
  signingSecret: string;
  gate: ChannelGate;
  relay: ChannelRelay;
  /** Hands a gated message's envelope to bolt; not awaited (the answer goes out first). */
  dispatch(envelope: Record<string, unknown>, retry: SlackRetry | undefined): void;
  /** Handles a press of an Approve / Deny button (approvals.ts); not awaited. */
  press(pressed: SlackPress): Promise<void>;
  log: Logger;
  now?: () => number;
}): PluginRoute {
  const { gate, relay, log } = options;
  const now = options.now ?? Date.now;
  /** When each member over the rate was last told so. */
  const noticed = new Map<string, number>();

  function tellRateLimited(sender: string, chat: string): void {
    const at = now();
    if (at - (noticed.get(sender) ?? Number.NEGATIVE_INFINITY) < 60_000) return;
    noticed.set(sender, at);
    relay.send(chat, RATE_NOTICE).catch((err: unknown) => {
      log.warn("slack: the rate notice was not posted", { chat, error: String(err) });
    });
  }

  return {
    listener: "webhook",
    method: "POST",
    path: options.path,
    verify(delivery) {
      const ok = slackDeliveryOk(delivery.headers, delivery.rawBody, options.signingSecret);
      if (!ok) gate.forged();
      return ok;
    },
    async handler({ body, headers, rawBody }): Promise<RouteResponse> {
      if (body === undefined) {
        // Not JSON: an interactivity payload (a press of an Approve / Deny button, approvals.ts),
        // under the same signature check as the events.
        const pressed = readPress(rawBody ?? Buffer.alloc(0));
        if ("ignored" in pressed) return { body: { ok: true, ignored: pressed.ignored } };
        void options
          .press(pressed)
          .catch((err: unknown) => log.error("slack: a button press failed", { error: String(err) }));
        return { headers: { "content-type": "text/plain" }, body: "" };
      }
      const delivery = readDelivery(body);
      if (delivery.kind === "challenge") return { body: { challenge: delivery.challenge } };
      if (delivery.kind === "ignored") return { body: { ok: true, ignored: delivery.reason } };
      const { sender, chat, eventId } = delivery;
      const retry = retryOf(headers);
      const verdict = await gate.admit(sender, eventId);
      if (verdict === "replay") {
        if (retry)
          log.info("slack: a retry of an event already taken", { event_id: eventId, retry: retry.num });
        return { body: { ok: true, replay: true } };
      }
      if (verdict === "not_allowed") {
        // The member id in the log is how an operator finds the id to put on the allowlist.
        log.warn("slack: sender not on the allowlist", { sender, chat });
        const refusal = new SparError(
          "FORBIDDEN",
          `Slack member ${sender} is not on this channel's allowlist`,
        );
        return { status: refusal.status, headers: { "x-slack-no-retry": "1" }, body: refusal.toJSON() };
      }
      if (verdict === "rate") {
        log.warn("slack: sender over the rate limit, message dropped", { sender, chat });
        tellRateLimited(sender, chat);
        return { body: { ok: true, rate_limited: true } };
      }
      options.dispatch(delivery.envelope, retry);
      return { body: { ok: true } };
    },
  };
}
