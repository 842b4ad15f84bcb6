/**
 * The Messages API wire format: Spar's request and messages out, text, tool_use blocks, usage and stop
 * reason back. Pure functions shared by the streamed and the non-streamed path; type-only SDK imports,
 * so loading this module never loads the SDK.
 */
import type {
  ContentBlock,
  ContentBlockParam,
  MessageCreateParamsBase,
  MessageParam,
  TextBlockParam,
  Tool,
  ToolResultBlockParam,
  StopReason as WireStopReason,
} from "@anthropic-ai/sdk/resources/messages";
import type {
  ChatMessage,
  LlmRequest,
  LlmResponse,
  PlacedContext,
  StopReason,
  ToolCall,
  ToolDefinition,
} from "../../sdk/index.js";
import { placeContext } from "../../sdk/index.js";
import { withBreakpoints } from "./cache.js";

/** The usage counts the Messages API reports (message_start's full set, message_delta's running ones). */
export interface WireUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
}

/**
 * Anthropic's input_tokens leave out the prompt tokens read from and written to its cache
 * (cache_read_input_tokens, cache_creation_input_tokens); Usage counts them in, as the other
 * providers do, and names each part.
 */
export function usageOf(usage: WireUsage): LlmResponse["usage"] {
  const cached = usage.cache_read_input_tokens ?? 0;
  const written = usage.cache_creation_input_tokens ?? 0;
  return {
    input_tokens: (usage.input_tokens ?? 0) + cached + written,
    output_tokens: usage.output_tokens ?? 0,
    ...(cached > 0 ? { cached_tokens: cached } : {}),
    ...(written > 0 ? { cache_write_tokens: written } : {}),
  };
}

/** Anthropic requires `max_tokens` on every request; this is the ceiling when the settings give none. */
export const DEFAULT_MAX_TOKENS = 4096;

/**
 * The body shared by both paths; with `request.cache`, its prompt cache breakpoints (cache.ts). The
 * turn's context is a text block of its own at the head of the turn's first user message: the
 * system prompt is top-level only, and there the context would end the cacheable prefix.
 */
export function requestBody(request: LlmRequest): MessageCreateParamsBase {
  const { model, max_tokens, temperature } = request.model;
  const placed = placeContext(request);
  const body: MessageCreateParamsBase = {
    model,
    max_tokens: max_tokens ?? DEFAULT_MAX_TOKENS,
    messages: toWireMessages(request.messages, placed),
    ...(placed.system ? { system: placed.system } : {}),
    ...(request.tools.length > 0 ? { tools: request.tools.map(toWireTool) } : {}),
    ...(temperature !== undefined ? { temperature } : {}),
  };
  return request.cache ? withBreakpoints(body, request, placed.at) : body;
}

/**
 * Tool results become `tool_result` blocks in a user message, and consecutive results share ONE
 * user message: the API wants every result of a tool_use turn in the message right after it.
 */
export function toWireMessages(
  messages: ChatMessage[],
  context: Pick<PlacedContext, "at" | "text"> = { at: -1, text: "" },
): MessageParam[] {
  const wire: MessageParam[] = [];
  let results: ToolResultBlockParam[] | undefined;
  for (const [index, message] of messages.entries()) {
    if (message.role === "user" && index === context.at) {
      results = undefined;
      const own: TextBlockParam[] = message.content ? [{ type: "text", text: message.content }] : [];
      wire.push({ role: "user", content: [{ type: "text", text: context.text }, ...own] });
      continue;
    }
    if (message.role !== "tool") {
      results = undefined;
      wire.push(toWireMessage(message));
      continue;
    }
    if (!results) {
      results = [];
      wire.push({ role: "user", content: results });
    }
    results.push({
      type: "tool_result",
      tool_use_id: message.tool_call_id,
      content: message.content,
      ...(message.is_error ? { is_error: true } : {}),
    });
  }
  return wire;
}

function toWireMessage(message: Exclude<ChatMessage, { role: "tool" }>): MessageParam {
  if (message.role === "user") return { role: "user", content: message.content };
  const calls = message.tool_calls ?? [];
  if (calls.length === 0) return { role: "assistant", content: message.content };
  // The API rejects empty text blocks, so a call-only turn carries the tool_use blocks alone.
  const text: ContentBlockParam[] = message.content ? [{ type: "text", text: message.content }] : [];
  return {
    role: "assistant",
    // The parsed arguments, not raw_arguments: the API wants `input` to be an object.
    content: [
      ...text,
      ...calls.map((c) => ({ type: "tool_use" as const, id: c.id, name: c.name, input: c.arguments })),
    ],
  };
}

function toWireTool(tool: ToolDefinition): Tool {
  // The API takes only object schemas, which is what a move's input_schema already is; spelling out
  // `type` satisfies the SDK's type without a cast.
  return {
    name: tool.name,
    description: tool.description,
    input_schema: { ...tool.input_schema, type: "object" },
  };
}

/** A non-streamed reply: text blocks joined, tool_use blocks in order. */
export function fromWireContent(content: ContentBlock[]): Pick<LlmResponse, "text" | "tool_calls"> {
  let text = "";
  const toolCalls: ToolCall[] = [];
  for (const block of content) {
    if (block.type === "text") text += block.text;
    else if (block.type === "tool_use") toolCalls.push(toolCallOf(block.id, block.name, block.input));
  }
  return { text, tool_calls: toolCalls };
}

/** The API sends an object; anything else is kept as `raw_arguments` for the agent loop to reject. */
function toolCallOf(id: string, name: string, input: unknown): ToolCall {
  if (isObject(input)) return { id, name, arguments: input };
  return {
    id,
    name,
    arguments: {},
    raw_arguments: typeof input === "string" ? input : JSON.stringify(input),
  };
}

/** A streamed tool_use block's input, from its joined `partial_json` pieces. */
export function parseToolCall(id: string, name: string, raw: string): ToolCall {
  try {
    // A call without input may stream no pieces at all.
    const parsed: unknown = JSON.parse(raw.trim() === "" ? "{}" : raw);
    if (isObject(parsed)) return { id, name, arguments: parsed };
  } catch {
    // Falls through: the agent loop answers the model with a validation error.
  }
  return { id, name, arguments: {}, raw_arguments: raw };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function stopReason(reason: WireStopReason | null): StopReason {
  if (reason === "end_turn" || reason === "stop_sequence") return "end";
  if (reason === "tool_use") return "tool_use";
  if (reason === "max_tokens") return "max_tokens";
  return "other";
}
