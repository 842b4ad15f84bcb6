/**
 * The Telegram webhook on the webhook listener. `verify` compares the
 * `X-Telegram-Bot-Api-Secret-Token` header with the secret given to setWebhook before the body is
 * parsed (a refusal is counted and answered 401 by the Arena). The handler then answers at once,
 * the turn running after the answer:
 * - not a text message from a user: 200, ignored (Telegram would only retry an error);
 * - a press of an Approve / Deny button (`callback_query`): 200, then answered (approvals.ts);
 * - a sender not on the allowlist: 403, no model call;
 * - an update already seen (Telegram redelivers what it thinks was lost), remembered across restarts
 *   in the store: 200, nothing done;
 * - a message sent more than a day ago (`TELEGRAM_WINDOW_S`, the time Telegram keeps an update it
 *   could not deliver; the webhook has no signing time, so the message's own date is the window):
 *   200, ignored, so a delivery replayed after its id was forgotten still runs nothing;
 * - a sender over `rate_per_minute`: 429 with `retry_after_s`. Telegram retries it later, and the
 *   retry is then a replay and dropped: a flood never queues up turns.
 */

import type { Logger, PluginRoute } from "../../sdk/index.js";
import { SparError } from "../../sdk/index.js";
import { type ChannelGate, type ChannelRelay, telegramDeliveryOk } from "../../sdk/kits/channels.js";
import { type ReadUpdate, readUpdate } from "./update.js";

/** The webhook route for `path`, checking deliveries against `secret`. */
/** The oldest message taken in, in seconds: Telegram keeps an undelivered update for a day. */
export const TELEGRAM_WINDOW_S = 24 * 3600;

/** How far ahead of this machine's clock a message's date may be (clocks differ). */
const CLOCK_SKEW_S = 300;

export function telegramWebhook(options: {
  path: string;
  secret: string;
  /** The bot's id (the token's part before the colon): update ids count per bot. */
  botId: string;
  gate: ChannelGate;
  relay: ChannelRelay;
  /** Handles a press of an Approve / Deny button (approvals.ts). */
  press(update: Extract<ReadUpdate, { kind: "press" }>): Promise<void>;
  log: Logger;
}): PluginRoute {
  const { gate, relay, log } = options;
  return {
    listener: "webhook",
    method: "POST",
    path: options.path,
    verify(delivery) {
      const ok = telegramDeliveryOk(delivery.headers, options.secret);
      if (!ok) gate.forged();
      return ok;
    },
    async handler({ body }) {
      const update = readUpdate(body);
      if (update.kind === "ignored") return { body: { ok: true, ignored: update.reason } };
      if (update.kind === "press") {
        // An Approve / Deny press (approvals.ts): answered after the 200, like a message's turn.
        void options
          .press(update)
          .catch((err: unknown) => log.error("telegram: a button press failed", { error: String(err) }));
        return { body: { ok: true } };
      }
      const age = Math.floor(Date.now() / 1000) - update.date;
      if (age > TELEGRAM_WINDOW_S || age < -CLOCK_SKEW_S) {
        gate.stale();
        log.warn("telegram: update refused: its message is outside the window (a replay)", {
          update_id: update.update_id,
        });
        return { body: { ok: true, ignored: "outside the window" } };
      }
      const verdict = await gate.admit(update.sender, `${options.botId}:${update.update_id}`);
      if (verdict === "not_allowed") {
        // The sender's id in the log is how an operator finds the id to put on the allowlist.
        log.warn("telegram: sender not on the allowlist", { sender: update.sender, chat: update.chat });
        throw new SparError("FORBIDDEN", `Telegram user ${update.sender} is not on this channel's allowlist`);
      }
      if (verdict === "rate") {
        throw new SparError("RATE_LIMITED", `Telegram user ${update.sender} sends too many messages`, {
          retry_after_s: 60,
        });
      }
      if (verdict === "replay") return { body: { ok: true, replay: true } };
      void relay.deliver({ chat: update.chat, sender: update.sender, text: update.text });
      return { body: { ok: true } };
    },
  };
}
