/**
 * The Telegram webhook on the webhook listener. `verify` compares the
 * `X-Telegram-Bot-Api-Secret-Token` header with the secret given to setWebhook before the body is
 * parsed (a refusal is counted and answered 401 by the Arena). The handler then answers at once,
 * the turn running after the answer:
 * - not a text message from a user: 200, ignored (Telegram would only retry an error);
 * - a sender not on the allowlist: 403, no model call;
 * - an update already seen (Telegram redelivers what it thinks was lost): 200, nothing done;
 * - a sender over `rate_per_minute`: 429 with `retry_after_s`. Telegram retries it later, and the
 *   retry is then a replay and dropped: a flood never queues up turns.
 */

import type { ChannelGate } from "../../lib/channels/gate.js";
import type { ChannelRelay } from "../../lib/channels/relay.js";
import { telegramDeliveryOk } from "../../lib/channels/verify.js";
import type { Logger, PluginRoute } from "../../sdk/index.js";
import { SparError } from "../../sdk/index.js";
import { readUpdate } from "./update.js";

/** The webhook route for `path`, checking deliveries against `secret`. */
export function telegramWebhook(options: {
  path: string;
  secret: string;
  gate: ChannelGate;
  relay: ChannelRelay;
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
      const verdict = gate.admit(update.sender, `tg:${update.update_id}`);
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
