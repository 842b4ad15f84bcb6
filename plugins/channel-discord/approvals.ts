/**
 * Approve / Deny buttons on Discord: the prompt is a channel message (REST, with the bot token) with
 * one action row of two buttons (component type 2, `custom_id` `spar:a:<request id>` /
 * `spar:d:<request id>`). A press arrives at the interactions endpoint as a MESSAGE_COMPONENT
 * interaction (type 3), Ed25519-verified like every interaction (endpoint.ts), taken once (its id),
 * checked by the kit's desk (owners; with none, the allowlist), and answered in the HTTP response:
 * UPDATE_MESSAGE (type 7: the text, then the outcome, no buttons) when this press decided it, a note
 * only the presser sees otherwise ("not allowed", "already approved").
 */
import { type REST, Routes } from "discord.js";
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
import { DISCORD_LIMIT } from "./gateway.js";
import { ephemeral, type Interaction } from "./interaction.js";

type Press = Extract<Interaction, { kind: "press" }>;

/** Discord's UPDATE_MESSAGE answer: the pressed message, edited, its buttons gone. */
function updated(content: string) {
  return { type: 7, data: { content, components: [], allowed_mentions: { parse: [] } } };
}

export function createDiscordApprovals(options: {
  rest: REST;
  desk: ApprovalDesk;
  gate: ChannelGate;
  log: Logger;
}) {
  const { rest, desk, gate, log } = options;

  const approvals: ChannelApprovals = {
    async ask(chat, prompt) {
      const message = (await rest.post(Routes.channelMessages(chat), {
        body: {
          content: approvalText(prompt, DISCORD_LIMIT),
          allowed_mentions: { parse: [] },
          components: [
            {
              type: 1,
              components: [
                { type: 2, style: 3, label: "Approve", custom_id: approvalAction(true, prompt.request_id) },
                { type: 2, style: 4, label: "Deny", custom_id: approvalAction(false, prompt.request_id) },
              ],
            },
          ],
        },
      })) as { id: string };
      return message.id;
    },
    async ended(chat, messageId, prompt, outcome) {
      await rest.patch(Routes.channelMessage(chat, messageId), {
        body: { content: endedText(prompt, outcome, DISCORD_LIMIT), components: [] },
      });
    },
    answerWith: (answer) => desk.answerWith(answer),
  };

  /** A verified, fresh press: the interaction response Discord shows. */
  async function press(pressed: Press): Promise<unknown> {
    const action = readApprovalAction(pressed.custom_id);
    if (!action) return ephemeral("This button is not one Spar knows.");
    const verdict = await gate.admit(pressed.sender, pressed.id);
    if (verdict === "replay") return ephemeral("This press was already received.");
    if (verdict === "rate") return ephemeral("Too many presses: try again in a minute.");
    const outcome = await desk.press({ ...action, chat: pressed.chat, sender: pressed.sender });
    if (outcome.result === "answered" && outcome.outcome) {
      return updated(withOutcome(pressed.content, outcome.outcome, DISCORD_LIMIT));
    }
    if (outcome.result === "already" && outcome.outcome) {
      // The message may still show its buttons (the turn that waited was on another node, or gone).
      const content = withOutcome(pressed.content, outcome.outcome, DISCORD_LIMIT);
      void rest
        .patch(Routes.channelMessage(pressed.chat, pressed.message_id), { body: { content, components: [] } })
        .catch((err: unknown) =>
          log.warn("discord: the approval message was not edited", { error: String(err) }),
        );
    }
    return ephemeral(outcome.text);
  }

  return { approvals, press };
}
