/**
 * Messages as rows and back, in one place, so `append` and `list` return identical messages. The
 * content and the tool calls are sealed (cipher.ts); role, ids, tool name and flags are plain.
 */
import type { ChatMessage, StoredMessage, ToolCall } from "../../sdk/index.js";
import type { Cipher } from "./cipher.js";

export interface MessageDbRow {
  id: string;
  bout_id: string;
  seq: number;
  role: ChatMessage["role"];
  content: Buffer;
  tool_calls: Buffer | null;
  tool_call_id: string | null;
  name: string | null;
  is_error: boolean;
  compacted?: boolean;
  created_at: string;
  turn_id: string | null;
}

export const MESSAGE_COLUMNS =
  "id, bout_id, seq, role, content, tool_calls, tool_call_id, name, is_error, created_at, turn_id";

type MessageMeta = Pick<MessageDbRow, "id" | "bout_id" | "seq" | "created_at" | "turn_id">;

/** The row for `message`, its text sealed. */
export function toMessageRow(cipher: Cipher, message: ChatMessage, meta: MessageMeta): MessageDbRow {
  const row: MessageDbRow = {
    ...meta,
    role: message.role,
    content: cipher.seal("messages.content", message.content),
    tool_calls: null,
    tool_call_id: null,
    name: null,
    is_error: false,
  };
  if (message.role === "assistant" && message.tool_calls?.length) {
    row.tool_calls = cipher.seal("messages.tool_calls", JSON.stringify(message.tool_calls));
  }
  if (message.role === "tool") {
    row.tool_call_id = message.tool_call_id;
    row.name = message.name;
    row.is_error = message.is_error === true;
  }
  return row;
}

/** The row's parameters, in MESSAGE_COLUMNS order. */
export function messageParams(row: MessageDbRow): unknown[] {
  return [
    row.id,
    row.bout_id,
    row.seq,
    row.role,
    row.content,
    row.tool_calls,
    row.tool_call_id,
    row.name,
    row.is_error,
    row.created_at,
    row.turn_id,
  ];
}

/**
 * Optional fields appear only when they carry something: no `tool_calls: []`, no `is_error: false`,
 * no `compacted: false`.
 */
export function toStoredMessage(cipher: Cipher, row: MessageDbRow): StoredMessage {
  const content = cipher.open("messages.content", row.content);
  const meta = {
    id: row.id,
    bout_id: row.bout_id,
    seq: row.seq,
    created_at: row.created_at,
    ...(row.turn_id ? { turn_id: row.turn_id } : {}),
    ...(row.compacted ? { compacted: true } : {}),
  };
  if (row.role === "assistant") {
    const calls = row.tool_calls
      ? (JSON.parse(cipher.open("messages.tool_calls", row.tool_calls)) as ToolCall[])
      : [];
    return calls.length > 0
      ? { role: "assistant", content, tool_calls: calls, ...meta }
      : { role: "assistant", content, ...meta };
  }
  if (row.role === "tool") {
    return {
      role: "tool",
      tool_call_id: row.tool_call_id ?? "",
      name: row.name ?? "",
      content,
      ...(row.is_error ? { is_error: true } : {}),
      ...meta,
    };
  }
  return { role: "user", content, ...meta };
}
