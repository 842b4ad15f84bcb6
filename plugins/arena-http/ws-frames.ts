/**
 * What a WebSocket client may send (ws.ts), checked with JSON Schemas as strict as the HTTP bodies':
 * unknown keys are refused with their path, and a chat frame's message fields are the message
 * route's own (message-fields.ts). The frame's `type` is read first, so an unknown type is named.
 */
import {
  findForbiddenKey,
  forbiddenKeyMessage,
  formatSchemaErrors,
  SparError,
  validatorFor,
} from "../../sdk/index.js";
import { ID_PARAM, MESSAGE_FIELDS } from "./message-fields.js";

export interface Subscription {
  kinds: Set<string> | "all";
  fighter_id?: string;
}

export type Frame =
  | { type: "subscribe"; subscription: Subscription; since?: number }
  | { type: "chat"; id: string; fighter_id: string; message: string; bout_id?: string; bout?: "new" }
  | { type: "cancel"; id: string };

/** A client's id for its chat: any non-empty text of reasonable length. */
const CHAT_ID = { type: "string", minLength: 1, maxLength: 200 } as const;

const SCHEMAS = {
  subscribe: {
    type: "object",
    additionalProperties: false,
    required: ["type"],
    properties: {
      type: { const: "subscribe" },
      kinds: { type: "array", items: { type: "string" } },
      fighter_id: ID_PARAM,
      since: { type: "integer", minimum: 0, description: "a non-negative integer (an event's seq)" },
    },
  },
  chat: {
    type: "object",
    additionalProperties: false,
    required: ["type", "id", "fighter_id", "message"],
    properties: { type: { const: "chat" }, id: CHAT_ID, fighter_id: ID_PARAM, ...MESSAGE_FIELDS },
  },
  cancel: {
    type: "object",
    additionalProperties: false,
    required: ["type", "id"],
    properties: { type: { const: "cancel" }, id: CHAT_ID },
  },
} as const;

const bad = (message: string, path?: string) =>
  new SparError("VALIDATION_FAILED", message, path === undefined ? {} : { path });

/** A client frame, or the refusal to send back in an error frame. */
export function parseFrame(text: string | undefined): Frame | SparError {
  if (text === undefined) return bad("frames are JSON text, not binary");
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return bad("the frame is not valid JSON");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return bad("a frame is a JSON object");
  const forbidden = findForbiddenKey(value);
  if (forbidden) return bad(forbiddenKeyMessage(forbidden, "frame"));
  const type = (value as { type?: unknown }).type;
  if (type !== "subscribe" && type !== "chat" && type !== "cancel") {
    return bad(
      `unknown frame type ${JSON.stringify(type)}; use "subscribe", "chat" or "cancel"`,
      "/frame/type",
    );
  }
  const validate = validatorFor(SCHEMAS[type]);
  if (!validate(value)) {
    const first = validate.errors?.[0];
    // An unknown key's path names the key, as the message does.
    const key = (first?.params as { additionalProperty?: string } | undefined)?.additionalProperty;
    const path = `/frame${first?.instancePath ?? ""}${key === undefined ? "" : `/${key}`}`;
    return bad(formatSchemaErrors(validate.errors, "frame"), path);
  }
  const f = value as Record<string, unknown>;
  if (type === "subscribe") {
    const kinds = (f.kinds as string[] | undefined) ?? ["*"];
    return {
      type,
      subscription: {
        kinds: kinds.includes("*") ? "all" : new Set(kinds),
        fighter_id: f.fighter_id as string | undefined,
      },
      since: f.since as number | undefined,
    };
  }
  return value as Frame;
}

/** The `id` of a frame that could not be accepted, when it has a string one. */
export function frameId(text: string | undefined): { id?: string } {
  try {
    const value: unknown = JSON.parse(text ?? "");
    const id = typeof value === "object" && value !== null ? (value as { id?: unknown }).id : undefined;
    return typeof id === "string" ? { id: id.slice(0, 200) } : {};
  } catch {
    return {};
  }
}
