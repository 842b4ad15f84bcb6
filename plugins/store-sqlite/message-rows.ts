/**
 * Messages as rows and back, in one place, so `append` and `list` return identical messages.
 */
import type { ChatMessage, StoredMessage, ToolCall } from "../../sdk/index.js";

export interface MessageDbRow {
  id: string;
  bout_id: string;
  seq: number;
  role: ChatMessage["role"];
  content: string;
  tool_calls: string | null;
  tool_call_id: string | null;
  name: string | null;
  is_error: number;
  created_at: string;
  turn_id: string | null;
}

/** A listed row also says whether compaction replaced it; a freshly appended one never is. */
export type ListedMessageDbRow = MessageDbRow & { compacted: number };

export const MESSAGE_COLUMNS =
  "id, bout_id, seq, role, content, tool_calls, tool_call_id, name, is_error, created_at, turn_id";

type MessageMeta = Pick<MessageDbRow, "id" | "bout_id" | "seq" | "created_at" | "turn_id">;

/** The role is stored as given: the table's CHECK, not this code, is what rejects a bad one. */
export function toMessageRow(message: ChatMessage, meta: MessageMeta): MessageDbRow {
  const row: MessageDbRow = {
    ...meta,
    role: message.role,
    content: message.content,
    tool_calls: null,
    tool_call_id: null,
    name: null,
    is_error: 0,
  };
  if (message.role === "assistant" && message.tool_calls?.length) {
    row.tool_calls = JSON.stringify(message.tool_calls);
  }
  if (message.role === "tool") {
    row.tool_call_id = message.tool_call_id;
    row.name = message.name;
    row.is_error = message.is_error ? 1 : 0;
  }
  return row;
}

/**
 * Optional fields appear only when they carry something: no `tool_calls: []`, no `is_error: false`,
 * no `compacted: false`.
 */
export function toStoredMessage(row: MessageDbRow | ListedMessageDbRow): StoredMessage {
  const meta = {
    id: row.id,
    bout_id: row.bout_id,
    seq: row.seq,
    created_at: row.created_at,
    ...(row.turn_id ? { turn_id: row.turn_id } : {}),
    ...("compacted" in row && row.compacted ? { compacted: true } : {}),
  };
  if (row.role === "assistant") {
    const calls = row.tool_calls ? (JSON.parse(row.tool_calls) as ToolCall[]) : [];
    return calls.length > 0
      ? { role: "assistant", content: row.content, tool_calls: calls, ...meta }
      : { role: "assistant", content: row.content, ...meta };
  }
  if (row.role === "tool") {
    return {
      role: "tool",
      tool_call_id: row.tool_call_id ?? "",
      name: row.name ?? "",
      content: row.content,
      ...(row.is_error ? { is_error: true } : {}),
      ...meta,
    };
  }
  return { role: "user", content: row.content, ...meta };
}
