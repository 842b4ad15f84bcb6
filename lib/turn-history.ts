import type { TurnRecord } from "../sdk/store-types.js";
import type { ChatMessage, StoredMessage, ToolCall } from "../sdk/types.js";

/**
 * The bout's history as the model sees it, from what is stored. Completed turns go in as they are.
 * A turn that did not complete (failed, cancelled, or cut off by a stopped daemon) goes in only if a
 * tool ran in it, so the model never forgets a side effect: its messages, a result for any call that
 * has none, and a note saying the turn ended without an answer. A turn that ran no tool is left out:
 * nothing happened, and a dangling user message would only confuse the model. Compacted messages are
 * left out (their summary is in the system prompt), and so is the turn being run (`currentTurnId`).
 */
export function promptHistory(
  messages: readonly StoredMessage[],
  turns: readonly TurnRecord[],
  currentTurnId?: string,
): ChatMessage[] {
  const unfinished = new Map(turns.filter((t) => t.status !== "completed").map((t) => [t.id, t]));
  const out: ChatMessage[] = [];
  let open: { turn: TurnRecord; messages: StoredMessage[] } | undefined;
  const close = () => {
    if (open) out.push(...interrupted(open.turn, open.messages));
    open = undefined;
  };
  for (const message of messages) {
    if (message.compacted) continue;
    if (currentTurnId !== undefined && message.turn_id === currentTurnId) continue;
    const turn = message.turn_id ? unfinished.get(message.turn_id) : undefined;
    if (open && open.turn.id !== message.turn_id) close();
    if (!turn) {
      out.push(strip(message));
      continue;
    }
    open ??= { turn, messages: [] };
    open.messages.push(message);
  }
  close();
  return out;
}

function interrupted(turn: TurnRecord, messages: StoredMessage[]): ChatMessage[] {
  const calls = messages.flatMap((m) => (m.role === "assistant" ? (m.tool_calls ?? []) : []));
  if (calls.length === 0) return [];
  const answered = new Set(messages.flatMap((m) => (m.role === "tool" ? [m.tool_call_id] : [])));
  const missing: ChatMessage[] = calls
    .filter((c) => !answered.has(c.id))
    .map((c) => ({
      role: "tool",
      tool_call_id: c.id,
      name: c.name,
      content: "no result: the turn stopped while this call ran; it may or may not have taken effect",
      is_error: true,
    }));
  const why = turn.error ? `${turn.error.code}: ${turn.error.message}` : "the daemon stopped";
  const note: ChatMessage = {
    role: "assistant",
    content: `(This turn ended without an answer, ${turn.status === "cancelled" ? "cancelled" : "failed"} (${why}). The tool calls above ran.)`,
  };
  return [...messages.map(strip), ...missing, note];
}

/** The message as the provider-neutral shape, without the store's bookkeeping. */
function strip(message: StoredMessage): ChatMessage {
  if (message.role === "user") return { role: "user", content: message.content };
  if (message.role === "assistant") {
    return message.tool_calls?.length
      ? { role: "assistant", content: message.content, tool_calls: message.tool_calls }
      : { role: "assistant", content: message.content };
  }
  return {
    role: "tool",
    tool_call_id: message.tool_call_id,
    name: message.name,
    content: message.content,
    ...(message.is_error ? { is_error: true } : {}),
  };
}

/**
 * Where a turn left `awaiting_approval` stands, from its stored messages: its user message, the
 * steps after it (the assistant messages and the results already committed), and the calls of its
 * last assistant message still without a result (the one that waited first). Undefined when the
 * messages are not those of a turn stopped at a call.
 */
export function resumedTurn(
  messages: readonly StoredMessage[],
  turnId: string,
): { user: ChatMessage & { role: "user" }; steps: ChatMessage[]; pending: ToolCall[] } | undefined {
  const own = messages.filter((m) => m.turn_id === turnId);
  const [first, ...rest] = own;
  const last = rest.findLast((m) => m.role === "assistant");
  if (first?.role !== "user" || last?.role !== "assistant" || !last.tool_calls?.length) return undefined;
  const answered = new Set(rest.flatMap((m) => (m.role === "tool" ? [m.tool_call_id] : [])));
  const pending = last.tool_calls.filter((c) => !answered.has(c.id));
  if (pending.length === 0) return undefined;
  return { user: { role: "user", content: first.content }, steps: rest.map(strip), pending };
}
