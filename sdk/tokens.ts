/**
 * The one token estimate Spar uses wherever it must count before a provider does (admission,
 * compaction, gorilla budgets): four characters a token, plus a little per message. Provider-neutral
 * and deliberately rough; real usage comes from the provider's reply.
 */
import type { ChatMessage, MoveDeclaration } from "./types.js";

/** Tokens in a text. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/** One message: its text, its tool calls' JSON, and 4 for the framing. */
export function messageTokens(message: ChatMessage): number {
  const calls = message.role === "assistant" && message.tool_calls ? JSON.stringify(message.tool_calls) : "";
  return 4 + estimateTokens(message.content) + estimateTokens(calls);
}

/** A prompt's context: the system prompt and the messages. */
export function contextTokens(system: string, messages: readonly ChatMessage[]): number {
  return estimateTokens(system) + messages.reduce((n, m) => n + messageTokens(m), 0);
}

/** What one model call sends: the context and the tools' definitions. */
export function promptTokens(prompt: {
  system: string;
  messages: readonly ChatMessage[];
  tools: readonly Pick<MoveDeclaration, "name" | "description" | "input_schema">[];
}): number {
  const tools = prompt.tools.map((t) => ({
    name: t.name,
    description: t.description,
    input_schema: t.input_schema,
  }));
  return (
    contextTokens(prompt.system, prompt.messages) +
    (tools.length > 0 ? estimateTokens(JSON.stringify(tools)) : 0)
  );
}
