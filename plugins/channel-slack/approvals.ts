/**
 * Approve / Deny buttons on Slack: the prompt is a Block Kit message (a plain-text section, so a
 * command line is never read as markup, and an `actions` block with two buttons whose `value` is
 * `spar:a:<request id>` / `spar:d:<request id>`). A press arrives as an interactivity payload
 * (`block_actions`, form-encoded `payload=…`) at the same Request URL as the events, verified by the
 * same v0 signature before anything reads it (webhook.ts). It is taken once (its `trigger_id`),
 * checked by the kit's desk (owners; with none, the allowlist), answered, and the message updated
 * (`chat.update`: its text, then the outcome, no buttons); a refusal or an "already …" is told to the
 * presser alone (`chat.postEphemeral`).
 */
import type { webApi } from "@slack/bolt";
import { type ChannelApprovals, findForbiddenKey, type Logger, SparError } from "../../sdk/index.js";
import {
  type ApprovalDesk,
  approvalAction,
  approvalText,
  type ChannelGate,
  endedText,
  readApprovalAction,
  withOutcome,
} from "../../sdk/kits/channels.js";

/** A section's text holds at most 3,000 characters. */
const LIMIT = 3000;

/** A button press read from a `block_actions` payload. */
export interface SlackPress {
  /** The replay key: Slack's `trigger_id` for this press. */
  id: string;
  sender: string;
  chat: string;
  /** The pressed message's `ts` and its text. */
  ts: string;
  text: string;
  /** The button's `value`. */
  value: string;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** The message's blocks: its text as plain text, and the buttons while it waits. */
function blocks(text: string, requestId?: string) {
  return [
    { type: "section", text: { type: "plain_text", text, emoji: false } },
    ...(requestId
      ? [
          {
            type: "actions",
            block_id: "spar_approval",
            elements: [
              {
                type: "button",
                action_id: "spar_approve",
                style: "primary",
                text: { type: "plain_text", text: "Approve" },
                value: approvalAction(true, requestId),
              },
              {
                type: "button",
                action_id: "spar_deny",
                style: "danger",
                text: { type: "plain_text", text: "Deny" },
                value: approvalAction(false, requestId),
              },
            ],
          },
        ]
      : []),
  ];
}

/**
 * An interactivity delivery's press (its raw body: `payload=<JSON>`, form-encoded); undefined when
 * it is another kind of interaction. Throws VALIDATION_FAILED when it is not a payload at all.
 */
export function readPress(rawBody: Buffer): SlackPress | { ignored: string } {
  const payload = new URLSearchParams(rawBody.toString("utf8")).get("payload");
  let value: unknown;
  try {
    value = payload === null ? undefined : JSON.parse(payload);
  } catch {
    value = undefined;
  }
  if (!isObject(value)) {
    throw new SparError(
      "VALIDATION_FAILED",
      "not a Slack delivery: neither JSON nor an interactivity payload",
    );
  }
  const forbidden = findForbiddenKey(value);
  if (forbidden) throw new SparError("VALIDATION_FAILED", "the payload holds a forbidden key");
  if (value.type !== "block_actions") return { ignored: `interaction ${String(value.type)}` };
  const action = Array.isArray(value.actions) && isObject(value.actions[0]) ? value.actions[0] : undefined;
  const container = isObject(value.container) ? value.container : {};
  const message = isObject(value.message) ? value.message : {};
  const sender = isObject(value.user) ? value.user.id : undefined;
  const chat = isObject(value.channel) ? value.channel.id : container.channel_id;
  const ts = container.message_ts ?? message.ts;
  const id = value.trigger_id ?? action?.action_ts;
  if (
    typeof sender !== "string" ||
    typeof chat !== "string" ||
    typeof ts !== "string" ||
    typeof id !== "string" ||
    typeof action?.value !== "string"
  ) {
    return { ignored: "a press without its sender, channel, message or value" };
  }
  return {
    id: id.slice(0, 200),
    sender,
    chat,
    ts,
    text: typeof message.text === "string" ? message.text : "",
    value: action.value,
  };
}

export function createSlackApprovals(options: {
  client: () => webApi.WebClient;
  desk: ApprovalDesk;
  gate: ChannelGate;
  log: Logger;
}) {
  const { desk, gate, log } = options;

  const approvals: ChannelApprovals = {
    async ask(chat, prompt) {
      const text = approvalText(prompt, LIMIT);
      const posted = await options
        .client()
        .chat.postMessage({ channel: chat, text, blocks: blocks(text, prompt.request_id) });
      return String(posted.ts);
    },
    async ended(chat, ts, prompt, outcome) {
      const text = endedText(prompt, outcome, LIMIT);
      await options.client().chat.update({ channel: chat, ts, text, blocks: blocks(text) });
    },
    answerWith: (answer) => desk.answerWith(answer),
  };

  async function tell(press: SlackPress, text: string): Promise<void> {
    await options
      .client()
      .chat.postEphemeral({ channel: press.chat, user: press.sender, text })
      .catch((err: unknown) => log.warn("slack: the presser was not told", { error: String(err) }));
  }

  /** A verified press: taken once, answered if the presser may, the message updated. */
  async function press(pressed: SlackPress): Promise<void> {
    const action = readApprovalAction(pressed.value);
    if (!action) return;
    const verdict = await gate.admit(pressed.sender, `press:${pressed.id}`);
    if (verdict === "replay") return;
    if (verdict === "rate") return tell(pressed, "Too many presses: try again in a minute.");
    const outcome = await desk.press({ ...action, chat: pressed.chat, sender: pressed.sender });
    if (outcome.result !== "answered") await tell(pressed, outcome.text);
    if (!outcome.outcome || (outcome.result !== "answered" && outcome.result !== "already")) return;
    const text = withOutcome(pressed.text, outcome.outcome, LIMIT);
    await options
      .client()
      .chat.update({ channel: pressed.chat, ts: pressed.ts, text, blocks: blocks(text) })
      .catch((err: unknown) =>
        log.warn("slack: the approval message was not updated", { error: String(err) }),
      );
  }

  return { approvals, press };
}
