/**
 * The Ollama chat wire format: Spar's request and messages out, tool calls, usage and stop reason back.
 * Pure functions, shared by the streamed and the non-streamed path.
 */
import { randomUUID } from "node:crypto";
import type { ChatRequest, ChatResponse, Message, Options, Tool } from "ollama";
import type {
  ChatMessage,
  LlmRequest,
  StopReason,
  ToolCall,
  ToolDefinition,
  Usage,
} from "../../sdk/index.js";
import { placeContext } from "../../sdk/index.js";

/** The body shared by both paths; `stream` is always explicit because Ollama streams when it is absent. */
export function requestBody(request: LlmRequest): ChatRequest {
  const { model, max_tokens, temperature } = request.model;
  const options: Partial<Options> = {
    ...(max_tokens !== undefined ? { num_predict: max_tokens } : {}),
    ...(temperature !== undefined ? { temperature } : {}),
  };
  return {
    model,
    messages: toWireMessages(request),
    ...(request.tools.length > 0 ? { tools: request.tools.map(toWireTool) } : {}),
    ...(Object.keys(options).length > 0 ? { options } : {}),
  };
}

/**
 * The system prompt first, then the conversation; the turn's context is a system message of its own
 * just before the turn's first user message, so the server can keep the conversation before it.
 */
function toWireMessages(request: LlmRequest): Message[] {
  const { system, at, text } = placeContext(request);
  const head: Message[] = system ? [{ role: "system", content: system }] : [];
  return [
    ...head,
    ...request.messages.flatMap((m, i): Message[] =>
      i === at ? [{ role: "system", content: text }, toWireMessage(m)] : [toWireMessage(m)],
    ),
  ];
}

function toWireMessage(message: ChatMessage): Message {
  switch (message.role) {
    case "user":
      return { role: "user", content: message.content };
    case "tool":
      // Ollama pairs a result with its call by tool name: it has no call ids.
      return { role: "tool", content: message.content, tool_name: message.name };
    case "assistant": {
      const calls = message.tool_calls ?? [];
      if (calls.length === 0) return { role: "assistant", content: message.content };
      // The parsed arguments, not raw_arguments: Ollama wants an object and would reject the whole turn.
      return {
        role: "assistant",
        content: message.content,
        tool_calls: calls.map((c) => ({ function: { name: c.name, arguments: c.arguments } })),
      };
    }
  }
}

function toWireTool(tool: ToolDefinition): Tool {
  return {
    type: "function",
    function: {
      name: tool.name,
      description: tool.description,
      // The client's type spells out a JSON Schema subset; the server accepts any schema object.
      parameters: tool.input_schema as NonNullable<Tool["function"]["parameters"]>,
    },
  };
}

/** The tool calls of one reply or one streamed line (Ollama sends a turn's calls in a single line). */
export function toolCallsOf(message: Partial<Message> | undefined): ToolCall[] {
  return (message?.tool_calls ?? []).map((c) => parseToolCall(c.function.name, c.function.arguments));
}

/**
 * Ollama tool calls carry no id, so each gets a fresh `call_<uuid>` for the agent loop to pair the
 * result with. Arguments come as an object; a string (some compatible servers) is parsed, and
 * anything that is not an object keeps its text in `raw_arguments`.
 */
function parseToolCall(name: string, raw: unknown): ToolCall {
  const id = `call_${randomUUID()}`;
  if (raw === undefined || raw === null) return { id, name, arguments: {} };
  if (isObject(raw)) return { id, name, arguments: raw };
  const text = typeof raw === "string" ? raw : JSON.stringify(raw);
  try {
    const parsed: unknown = JSON.parse(text.trim() === "" ? "{}" : text);
    if (isObject(parsed)) return { id, name, arguments: parsed };
  } catch {
    // Falls through: the agent loop answers the model with a validation error.
  }
  return { id, name, arguments: {}, raw_arguments: text };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Counts are absent on some replies (e.g. a prompt served from the cache has no prompt_eval_count). */
export function usageOf(reply: Partial<Pick<ChatResponse, "prompt_eval_count" | "eval_count">>): Usage {
  return { input_tokens: reply.prompt_eval_count ?? 0, output_tokens: reply.eval_count ?? 0 };
}

/** Ollama says "stop" after tool calls too, so the calls decide between "end" and "tool_use". */
export function stopReason(doneReason: string | undefined, toolCalls: number): StopReason {
  if (doneReason === "stop") return toolCalls > 0 ? "tool_use" : "end";
  if (doneReason === "length") return "max_tokens";
  return "other";
}
