// The script every fake LLM server follows, whatever wire protocol it speaks, so one contract suite
// (test/contract/providers.test.ts) can drive every provider plugin the same way.
import { CONTEXT_HEADING } from "../../sdk/turn-context.js";

export interface ScriptedToolCall {
  name: string;
  // A string is sent verbatim, so tests can script invalid JSON arguments.
  arguments: Record<string, unknown> | string;
}

export interface ScriptedReply {
  text?: string;
  tool_calls?: ScriptedToolCall[];
  /**
   * Counted as OpenAI counts them: prompt_tokens includes the cached (read from the prompt cache)
   * and cache-write ones. Each fake reports them as its real API does.
   */
  usage?: {
    prompt_tokens: number;
    completion_tokens: number;
    cached_tokens?: number;
    cache_write_tokens?: number;
  };
  /** Answer with this HTTP error status (and the protocol's error body) instead. */
  status?: number;
  error_message?: string;
  headers?: Record<string, string>;
  /** Wait this long before the first byte. */
  delay_ms?: number;
  /** Streamed: close the socket half way through, without the protocol's end marker. */
  truncate_stream?: boolean;
  /** Answer 200 with a body that is not valid for the protocol (garbage JSON / a broken event). */
  malformed?: boolean;
  model?: string;
}

/** One chat request as the fake understood it, in protocol-neutral terms, for assertions. */
export interface ReceivedCall {
  model: string;
  system: string;
  /** Names of the tools offered. */
  tools: string[];
  /** Text of the last user message (Spar's context at its head left out). */
  last_user_text: string;
  /**
   * Spar's per-turn context, where the protocol carries it (README "Prompt caching"): a system
   * message after the head (OpenAI, Ollama), a text block or part at the head of a user message
   * (Anthropic, Gemini); "" when the request has none.
   */
  context: string;
  /** Every text of the request in the order the model reads it: system, messages, tool results. */
  transcript: string[];
  /** Contents of the tool results sent back, in order. */
  tool_results: string[];
  stream: boolean;
}

export interface FakeLlmServer {
  /** What goes in `base_url` for this provider. */
  readonly url: string;
  /** Chat requests received, in order, normalized. */
  calls(): ReceivedCall[];
  enqueue(...replies: ScriptedReply[]): void;
  reset(): void;
  close(): Promise<void>;
}

/** Whether a text block is Spar's per-turn context (sdk/turn-context.ts) rather than the user's words. */
export function isSparContext(text: unknown): boolean {
  return typeof text === "string" && text.startsWith(CONTEXT_HEADING);
}

/**
 * The reply when nothing is queued: "echo: <last user text>", or after a tool result
 * "done: <tool result>", so a tool round trip finishes by itself.
 */
export function defaultReply(lastRole: "user" | "tool", lastText: string): ScriptedReply {
  return { text: lastRole === "tool" ? `done: ${lastText}` : `echo: ${lastText}` };
}

/** Rough token estimate (chars / 4, at least 1) when a reply scripts no usage. */
export function estimateTokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}

/** Splits text into at least three pieces so streaming is visible. */
export function splitForStreaming(text: string): string[] {
  const words = text.match(/\S+\s*|\s+/g) ?? [];
  if (words.length >= 3) return words;
  const size = Math.max(1, Math.ceil(text.length / 3));
  const pieces: string[] = [];
  for (let i = 0; i < text.length; i += size) pieces.push(text.slice(i, i + size));
  return pieces.length > 0 ? pieces : [""];
}
