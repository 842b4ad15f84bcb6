/**
 * Reading one Telegram Update (https://core.telegram.org/bots/api#update), as the webhook receives
 * it, into what the channel needs: the update id (the replay key), the sender, the chat and the
 * text; or, for a `callback_query` (a press of an Approve / Deny button), the press. The body was verified (secret header) before this runs, but it is still read defensively:
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
  | {
      kind: "press";
      update_id: number;
      /** The callback query's id: answerCallbackQuery takes it. */
      callback_id: string;
      sender: string;
      chat: string;
      /** The pressed message: its id and text (edited to show the outcome). */
      message_id: number;
      text: string;
      /** The button's `callback_data`. */
      data: string;
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
  if (isObject(body.callback_query)) return readPress(update_id, body.callback_query);
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

/** A `callback_query`: a press of an inline button on a message the bot sent. */
function readPress(update_id: number, query: Record<string, unknown>): ReadUpdate {
  const sender = isObject(query.from) ? idOf(query.from.id) : undefined;
  const message = query.message;
  if (typeof query.id !== "string" || query.id === "" || query.id.length > 64 || sender === undefined) {
    return { kind: "ignored", update_id, reason: "a press without its id or sender" };
  }
  if (!isObject(message) || typeof message.message_id !== "number" || !isObject(message.chat)) {
    return { kind: "ignored", update_id, reason: "a press on no message" };
  }
  const chat = idOf(message.chat.id);
  if (chat === undefined || typeof query.data !== "string") {
    return { kind: "ignored", update_id, reason: "a press without its chat or data" };
  }
  return {
    kind: "press",
    update_id,
    callback_id: query.id,
    sender,
    chat,
    message_id: message.message_id,
    text: typeof message.text === "string" ? message.text : "",
    data: query.data,
  };
}
