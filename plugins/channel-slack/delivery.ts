/**
 * What an Events API delivery asks of the channel, read from its verified JSON body: the
 * `url_verification` challenge (sent when the Request URL is saved in the app's settings), a plain
 * message from a member, or something the channel leaves alone: other event types, message subtypes
 * (edits, deletions, joins, files, `bot_message`) and anything a bot posted, the bot's own replies
 * included, so it never answers itself.
 */
import { SparError } from "../../sdk/index.js";

export type SlackDelivery =
  | { kind: "challenge"; challenge: string }
  | {
      kind: "message";
      /** The envelope's `event_id`: the same on every retry of one event. */
      eventId: string;
      sender: string;
      chat: string;
      text: string;
      /** The envelope, for bolt. */
      envelope: Record<string, unknown>;
    }
  | { kind: "ignored"; reason: string };

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function malformed(problem: string): SparError {
  return new SparError("VALIDATION_FAILED", `not a Slack Events API delivery: ${problem}`);
}

/** Reads a delivery's body; throws VALIDATION_FAILED when it is not an Events API envelope. */
export function readDelivery(body: unknown): SlackDelivery {
  if (!isObject(body)) throw malformed("the body is not a JSON object");
  if (body.type === "url_verification") {
    if (typeof body.challenge !== "string" || body.challenge.length === 0 || body.challenge.length > 1_000)
      throw malformed("a url_verification without a challenge");
    return { kind: "challenge", challenge: body.challenge };
  }
  if (body.type !== "event_callback") return { kind: "ignored", reason: `envelope ${String(body.type)}` };
  const { event, event_id: eventId } = body;
  if (typeof eventId !== "string" || eventId.length === 0 || eventId.length > 200)
    throw malformed("an event_callback without an event_id");
  if (!isObject(event)) throw malformed("an event_callback without an event");
  if (event.type !== "message") return { kind: "ignored", reason: `event ${String(event.type)}` };
  if (event.subtype !== undefined)
    return { kind: "ignored", reason: `message subtype ${String(event.subtype)}` };
  if (event.bot_id !== undefined) return { kind: "ignored", reason: "a bot's message" };
  const { user, channel, text } = event;
  if (typeof user !== "string" || typeof channel !== "string" || typeof event.ts !== "string")
    throw malformed("a message event without user, channel and ts");
  if (typeof text !== "string" || text.trim() === "")
    return { kind: "ignored", reason: "a message without text" };
  return { kind: "message", eventId, sender: user, chat: channel, text, envelope: body };
}
