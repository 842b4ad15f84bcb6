/**
 * What the OpenAI-compatible routes read and write, as pure functions: the new message taken from a
 * chat request, and a fighter's reply as OpenAI's `chat.completion`, its streamed
 * `chat.completion.chunk`s and its `model` objects. Kept apart from the routes so each shape is
 * checked field by field against OpenAI's in a unit test.
 */
import { type FighterMessageResult, type FighterRecord, SparError, type Usage } from "../../sdk/index.js";
import type { ChatMessageInput } from "./openai-schema.js";

/**
 * The text the fighter is sent: the last `user` message's, a string or its `text` parts joined by
 * newlines. The fighter keeps its own history, so earlier messages are not re-sent; a part it could
 * not read (an image, audio, a file) is refused rather than silently dropped.
 */
export function lastUserText(messages: readonly ChatMessageInput[]): string {
  const index = messages.findLastIndex((m) => m.role === "user");
  const last = messages[index];
  if (!last) {
    throw new SparError(
      "VALIDATION_FAILED",
      "messages has no user message: the last user message is what the fighter answers",
      { path: "/body/messages" },
    );
  }
  const texts: string[] = [];
  if (typeof last.content === "string") texts.push(last.content);
  for (const [part, { type, text }] of (Array.isArray(last.content) ? last.content : []).entries()) {
    const where = `messages[${index}].content[${part}]`;
    if (type !== "text") {
      throw new SparError(
        "VALIDATION_FAILED",
        `${where} is a "${type}" part; fighters read text only: send the message as text parts`,
        { path: `/body/messages/${index}/content/${part}` },
      );
    }
    if (typeof text !== "string") {
      throw new SparError("VALIDATION_FAILED", `${where}.text must be a string`, {
        path: `/body/messages/${index}/content/${part}/text`,
      });
    }
    texts.push(text);
  }
  const text = texts.join("\n");
  if (text.trim() === "") {
    throw new SparError("VALIDATION_FAILED", `messages[${index}], the last user message, has no text`, {
      path: `/body/messages/${index}/content`,
    });
  }
  return text;
}

/** OpenAI's usage block from a turn's usage (every model call of the turn, tool rounds included). */
export function usageOf(usage: Usage): {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
} {
  return {
    prompt_tokens: usage.input_tokens,
    completion_tokens: usage.output_tokens,
    total_tokens: usage.input_tokens + usage.output_tokens,
  };
}

/** `length` when the turn ran out of iterations without a final answer; `stop` otherwise. */
export function finishReason(stop: FighterMessageResult["stop_reason"]): "stop" | "length" {
  return stop === "max_iterations" ? "length" : "stop";
}

/** What every completion and chunk of one turn shares. */
export interface CompletionHead {
  /** `chatcmpl-<turn id>`. */
  id: string;
  /** Unix seconds when the request arrived. */
  created: number;
  /** The fighter's name. */
  model: string;
}

/** The head of a turn's completion: its id comes from the turn's. */
export function headOf(
  turnId: string,
  created: number,
  fighter: Pick<FighterRecord, "name">,
): CompletionHead {
  return { id: `chatcmpl-${turnId}`, created, model: fighter.name };
}

/** A non-streamed answer: OpenAI's `chat.completion`. */
export function completionOf(head: CompletionHead, result: FighterMessageResult) {
  return {
    id: head.id,
    object: "chat.completion" as const,
    created: head.created,
    model: head.model,
    choices: [
      {
        index: 0,
        message: { role: "assistant" as const, content: result.response, refusal: null },
        logprobs: null,
        finish_reason: finishReason(result.stop_reason),
      },
    ],
    usage: usageOf(result.usage),
  };
}

/**
 * One streamed `chat.completion.chunk` with a single choice. With `include_usage` every chunk carries
 * `usage: null`, as OpenAI's do, until the usage chunk at the end.
 */
export function chunkOf(
  head: CompletionHead,
  delta: { role?: "assistant"; content?: string },
  finish: "stop" | "length" | null,
  includeUsage: boolean,
) {
  return {
    id: head.id,
    object: "chat.completion.chunk" as const,
    created: head.created,
    model: head.model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    ...(includeUsage ? { usage: null } : {}),
  };
}

/** The last chunk when `stream_options.include_usage` is set: no choices, the turn's usage. */
export function usageChunkOf(head: CompletionHead, usage: Usage) {
  return {
    id: head.id,
    object: "chat.completion.chunk" as const,
    created: head.created,
    model: head.model,
    choices: [],
    usage: usageOf(usage),
  };
}

/**
 * Text the stream still owes once the turn has ended. The deltas are the model's words as written;
 * when none came (a provider that does not stream) the reply is sent whole, and when the kernel
 * stopped the turn (loop guard, iteration limit) its note, which no model wrote, follows them.
 */
export function streamTail(streamed: boolean, result: FighterMessageResult): string {
  if (!streamed) return result.response;
  return result.stop_reason === "end" ? "" : `\n\n${result.response}`;
}

/** A fighter as an OpenAI `model`. */
export function modelOf(fighter: FighterRecord) {
  return {
    id: fighter.name,
    object: "model" as const,
    created: Math.floor(Date.parse(fighter.created_at) / 1000),
    owned_by: "spar",
  };
}
