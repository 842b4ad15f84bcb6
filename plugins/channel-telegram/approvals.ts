/**
 * Approve / Deny buttons on Telegram: the prompt is a plain-text message with an inline keyboard
 * (`callback_data` `spar:a:<request id>` / `spar:d:<request id>`, within Telegram's 64 bytes); a
 * press arrives at the webhook as a `callback_query` update, is taken once (its update id, as for
 * messages), checked by the kit's desk (owners; with none, the allowlist), answered, and always
 * acknowledged with `answerCallbackQuery` (the presser's toast: approved, denied, already …, not
 * allowed). An answered press edits the message: its text, then the outcome, and no keyboard.
 */
import type { Api } from "grammy";
import type { ChannelApprovals, Logger } from "../../sdk/index.js";
import {
  type ApprovalDesk,
  approvalAction,
  approvalText,
  type ChannelGate,
  endedText,
  readApprovalAction,
  withOutcome,
} from "../../sdk/kits/channels.js";
import type { ReadUpdate } from "./update.js";

/** Telegram's longest message text. */
const LIMIT = 4096;

type Press = Extract<ReadUpdate, { kind: "press" }>;

export function createTelegramApprovals(options: {
  api: Api;
  desk: ApprovalDesk;
  gate: ChannelGate;
  /** The bot's id: update ids count per bot (the replay key, as for messages). */
  botId: string;
  log: Logger;
}) {
  const { api, desk, gate, log } = options;

  const approvals: ChannelApprovals = {
    async ask(chat, prompt) {
      const sent = await api.sendMessage(chat, approvalText(prompt, LIMIT), {
        reply_markup: {
          inline_keyboard: [
            [
              { text: "Approve", callback_data: approvalAction(true, prompt.request_id) },
              { text: "Deny", callback_data: approvalAction(false, prompt.request_id) },
            ],
          ],
        },
      });
      return String(sent.message_id);
    },
    async ended(chat, messageId, prompt, outcome) {
      await api.editMessageText(chat, Number(messageId), endedText(prompt, outcome, LIMIT), {
        reply_markup: { inline_keyboard: [] },
      });
    },
    answerWith: (answer) => desk.answerWith(answer),
  };

  /** Tells the presser (the toast under the chat); a failure is only logged. */
  async function toast(press: Press, text: string): Promise<void> {
    await api
      .answerCallbackQuery(press.callback_id, { text })
      .catch((err: unknown) => log.warn("telegram: answerCallbackQuery failed", { error: String(err) }));
  }

  /** A verified `callback_query`: taken once, answered if the presser may, acknowledged always. */
  async function press(update: Press): Promise<void> {
    const action = readApprovalAction(update.data);
    if (!action) return toast(update, "This button is not one Spar knows.");
    const verdict = await gate.admit(update.sender, `${options.botId}:${update.update_id}`);
    if (verdict === "replay") return;
    if (verdict === "rate") return toast(update, "Too many presses: try again in a minute.");
    // Who may answer is the desk's to say (owners, else the allowlist), not the gate's.
    const outcome = await desk.press({ ...action, chat: update.chat, sender: update.sender });
    await toast(update, outcome.text);
    if (!outcome.outcome || (outcome.result !== "answered" && outcome.result !== "already")) return;
    await api
      .editMessageText(update.chat, update.message_id, withOutcome(update.text, outcome.outcome, LIMIT), {
        reply_markup: { inline_keyboard: [] },
      })
      .catch((err: unknown) =>
        log.warn("telegram: the approval message was not edited", { error: String(err) }),
      );
  }

  return { approvals, press };
}
