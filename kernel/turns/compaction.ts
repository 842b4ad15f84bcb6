import type { ChatMessage, ModelSettings, StoredMessage } from "../../sdk/types.js";

/** Context windows of well-known model families, for settings that give no `context_window`. */
const KNOWN_WINDOWS: [RegExp, number][] = [
  [/^gpt-4\.1|^gpt-5/, 1_000_000],
  [/^gpt-4o|^o[134]/, 128_000],
  [/^gpt-4-turbo/, 128_000],
  [/^gpt-3\.5/, 16_385],
  [/^claude/, 200_000],
  [/^gemini-1\.5-pro|^gemini-(2|3)/, 1_000_000],
  [/^gemini/, 1_000_000],
  [/llama-?3\.[123]|llama3\.[123]/, 128_000],
  [/llama-?3|llama3/, 8_192],
  [/qwen|mistral|mixtral|deepseek/, 32_768],
];
export const FALLBACK_WINDOW = 8_192;

export function contextWindowFor(model: ModelSettings): number {
  if (model.context_window) return model.context_window;
  const name = model.model.toLowerCase().replace(/^[\w.-]+\//, "");
  return KNOWN_WINDOWS.find(([pattern]) => pattern.test(name))?.[1] ?? FALLBACK_WINDOW;
}

/** A rough, provider-neutral estimate: four characters a token, plus a little per message. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

export function messageTokens(message: ChatMessage): number {
  const calls = message.role === "assistant" && message.tool_calls ? JSON.stringify(message.tool_calls) : "";
  return 4 + estimateTokens(message.content) + estimateTokens(calls);
}

/** The estimated context of a prompt: system prompt (Creed and summary included) and messages. */
export function contextTokens(system: string, messages: readonly ChatMessage[]): number {
  return estimateTokens(system) + messages.reduce((n, m) => n + messageTokens(m), 0);
}

/**
 * Where to cut: everything before the `keep_recent` newest messages, moved earlier so that a tool
 * call and its results are never split (the kept part never starts with a tool result). When
 * `budget` is given and the kept messages alone would still pass it (a few huge messages), more of
 * them go, down to the newest message. Returns the seq of the last message to compact, or undefined
 * when nothing can be compacted.
 */
export function compactionBoundary(
  messages: readonly StoredMessage[],
  keepRecent: number,
  budget = Number.POSITIVE_INFINITY,
): number | undefined {
  let cut = messages.length - keepRecent;
  while (cut > 0 && messages[cut]?.role === "tool") cut -= 1;
  while (cut < messages.length - 1 && contextTokens("", messages.slice(Math.max(cut, 0))) > budget) {
    cut = Math.max(cut, 0) + 1;
    while (cut < messages.length - 1 && messages[cut]?.role === "tool") cut += 1;
  }
  return cut > 0 ? messages[cut - 1]?.seq : undefined;
}
