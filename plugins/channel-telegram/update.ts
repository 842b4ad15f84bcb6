/**
 * Reading one Telegram Update (https://core.telegram.org/bots/api#update), as the webhook receives
 * it, into what the channel needs: the update id (the replay key), the sender, the chat and the
 * text. The body was verified (secret header) before this runs, but it is still read defensively:
 * anything that is not a text message from a user is "ignored", never an error, so Telegram does
 * not retry it.
 */
import { SparError } from "../../sdk/index.js";

export type ReadUpdate =
  | {
      kind: "text";
      update_id: number;
      sender: string;
      chat: string;
      text: string;
      /** When the message was sent (unix seconds): Telegram's webhook carries no other time. */
      date: number;
    }
  | { kind: "ignored"; update_id: number; reason: string };

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** An id as Telegram sends it (an integer), or a string one (tests name chats with letters). */
function idOf(value: unknown): string | undefined {
  if (typeof value === "number" && Number.isSafeInteger(value)) return String(value);
  if (typeof value === "string" && /^[A-Za-z0-9@_-]{1,64}$/.test(value)) return value;
  return undefined;
}

/**
 * The update's text message, or why it is ignored. Throws VALIDATION_FAILED only when the body is
 * not an Update at all (no integer `update_id`).
 */
export function readUpdate(body: unknown): ReadUpdate {
  if (!isObject(body) || typeof body.update_id !== "number" || !Number.isSafeInteger(body.update_id)) {
    throw new SparError("VALIDATION_FAILED", "the body is not a Telegram Update (no integer update_id)");
  }
  const update_id = body.update_id;
  const message = body.message;
  if (!isObject(message)) return { kind: "ignored", update_id, reason: "not a message" };
  if (typeof message.text !== "string" || message.text.trim() === "") {
    return { kind: "ignored", update_id, reason: "not a text message" };
  }
  const sender = isObject(message.from) ? idOf(message.from.id) : undefined;
  if (sender === undefined) return { kind: "ignored", update_id, reason: "no sender" };
  if (isObject(message.from) && message.from.is_bot === true) {
    return { kind: "ignored", update_id, reason: "sent by a bot" };
  }
  const chat = isObject(message.chat) ? idOf(message.chat.id) : undefined;
  if (chat === undefined) return { kind: "ignored", update_id, reason: "no chat" };
  if (typeof message.date !== "number" || !Number.isSafeInteger(message.date)) {
    return { kind: "ignored", update_id, reason: "no date" };
  }
  return { kind: "text", update_id, sender, chat, text: message.text, date: message.date };
}
