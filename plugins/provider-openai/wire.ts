/**
 * The chat-completions wire format: Spar's request and messages out, tool calls, usage and stop reason
 * back. Pure functions, shared by the streamed and the non-streamed path.
 */
import type {
  ChatCompletion,
  ChatCompletionCreateParamsBase,
  ChatCompletionMessageParam,
  ChatCompletionMessageToolCall,
  ChatCompletionTool,
} from "openai/resources/chat/completions";
import type { CreateEmbeddingResponse } from "openai/resources/embeddings";
import type {
  ChatMessage,
  EmbedRequest,
  EmbedResponse,
  LlmRequest,
  LlmResponse,
  StopReason,
  ToolCall,
  ToolDefinition,
} from "../../sdk/index.js";
import { checkEmbeddings, placeContext } from "../../sdk/index.js";

/**
 * The body shared by both paths; `max_tokens` goes out as `max_completion_tokens`, the current name.
 * With `cacheKey` (a server that takes one, and a request whose cache is on), the fighter's
 * `prompt_cache_key`, so its requests, which share their prefix, reach the same cache.
 */
export function requestBody(request: LlmRequest, cacheKey = false): ChatCompletionCreateParamsBase {
  const { model, max_tokens, temperature } = request.model;
  return {
    model,
    messages: toWireMessages(request),
    ...(request.tools.length > 0 ? { tools: request.tools.map(toWireTool) } : {}),
    ...(max_tokens !== undefined ? { max_completion_tokens: max_tokens } : {}),
    ...(temperature !== undefined ? { temperature } : {}),
    ...(cacheKey && request.cache ? { prompt_cache_key: request.cache.key } : {}),
  };
}

/**
 * The system prompt first, then the conversation; the turn's context is a system message of its own
 * just before the turn's first user message, so every message before it is a prefix the server's
 * cache can match. "system", as the head's: OpenAI reads it as "developer" on models that want that.
 */
function toWireMessages(request: LlmRequest): ChatCompletionMessageParam[] {
  const { system, at, text } = placeContext(request);
  const head: ChatCompletionMessageParam[] = system ? [{ role: "system", content: system }] : [];
  return [
    ...head,
    ...request.messages.flatMap((m, i): ChatCompletionMessageParam[] =>
      i === at ? [{ role: "system", content: text }, toWireMessage(m)] : [toWireMessage(m)],
    ),
  ];
}

function toWireMessage(message: ChatMessage): ChatCompletionMessageParam {
  switch (message.role) {
    case "user":
      return { role: "user", content: message.content };
    case "tool":
      return { role: "tool", tool_call_id: message.tool_call_id, content: message.content };
    case "assistant": {
      const calls = message.tool_calls ?? [];
      if (calls.length === 0) return { role: "assistant", content: message.content };
      return {
        role: "assistant",
        content: message.content === "" ? null : message.content,
        // The parsed arguments, not raw_arguments: a server that rejects invalid JSON in the history
        // would otherwise fail every later turn of the bout.
        tool_calls: calls.map((c) => ({
          id: c.id,
          type: "function",
          function: { name: c.name, arguments: JSON.stringify(c.arguments) },
        })),
      };
    }
  }
}

function toWireTool(tool: ToolDefinition): ChatCompletionTool {
  return {
    type: "function",
    function: { name: tool.name, description: tool.description, parameters: tool.input_schema },
  };
}

/** Custom (free-text) tools are never offered, so only function calls are expected back. */
export function isFunctionCall(
  call: ChatCompletionMessageToolCall,
): call is Extract<ChatCompletionMessageToolCall, { type: "function" }> {
  return call.type === "function";
}

/** Invalid or non-object JSON keeps the raw text in `raw_arguments`, with `arguments` set to `{}`. */
export function parseToolCall(id: string, name: string, raw: string): ToolCall {
  try {
    // Some servers send "" for a call without arguments.
    const parsed: unknown = JSON.parse(raw.trim() === "" ? "{}" : raw);
    if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) {
      return { id, name, arguments: parsed as Record<string, unknown> };
    }
  } catch {
    // Falls through: the agent loop answers the model with a validation error.
  }
  return { id, name, arguments: {}, raw_arguments: raw };
}

/** prompt_tokens counts the cached ones too (prompt_tokens_details.cached_tokens), as Usage does. */
export function usageOf(usage: ChatCompletion["usage"]): LlmResponse["usage"] {
  const cached = usage?.prompt_tokens_details?.cached_tokens ?? 0;
  return {
    input_tokens: usage?.prompt_tokens ?? 0,
    output_tokens: usage?.completion_tokens ?? 0,
    ...(cached > 0 ? { cached_tokens: cached } : {}),
  };
}

export function stopReason(finish: string | null): StopReason {
  if (finish === "stop") return "end";
  if (finish === "tool_calls") return "tool_use";
  if (finish === "length") return "max_tokens";
  return "other";
}

/**
 * An embeddings reply's vectors in the order of the inputs: each item says which input it embeds
 * (`index`), and nothing in the protocol promises the items come in that order.
 */
export function embedded(
  provider: string,
  request: EmbedRequest,
  reply: Partial<CreateEmbeddingResponse>,
): EmbedResponse {
  const data = reply.data ?? [];
  // Each where its index says. A count off is refused as such; an index out of range or given twice
  // leaves a hole, refused too (checkEmbeddings).
  const placed: (number[] | undefined)[] = new Array(data.length);
  for (const [position, item] of data.entries()) {
    const at = Number.isInteger(item.index) ? item.index : position;
    if (at >= 0 && at < data.length && placed[at] === undefined) placed[at] = item.embedding;
  }
  const vectors = checkEmbeddings(provider, request, placed);
  const tokens = reply.usage?.prompt_tokens;
  return typeof tokens === "number" ? { vectors, usage: { input_tokens: tokens } } : { vectors };
}
