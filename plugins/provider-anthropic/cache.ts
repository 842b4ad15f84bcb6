/**
 * Prompt caching on the Messages API: `cache_control: {type: "ephemeral"}` breakpoints on a request
 * whose `cache` says where its stable prefix ends (README "Prompt caching"). The API caches the
 * prefix up to each breakpoint (tools, then system, then messages) for five minutes from its last
 * use; a later request that repeats a prefix byte for byte reads it at a tenth of the input price,
 * and the first pays a quarter more to write it.
 *
 * Breakpoints (the API allows four; this uses at most three):
 * 1. the end of the stable system prompt (tools and system: the same for every turn of the
 *    fighter), or the last tool when there is no stable system text;
 * 2. the last message before the turn's context (wire.ts puts it at the head of the turn's user
 *    message), or, without one, before the turn's user message: the conversation so far, which
 *    the next turn repeats byte for byte and reads from the cache;
 * 3. the last message: within a turn's tool loop, each call repeats the one before and adds to it.
 *
 * They are always sent, whatever the prompt's length: a prefix shorter than the model's minimum
 * (1,024 tokens for Claude Sonnet 4.5, Opus 4.1, Sonnet 4; 2,048 for Sonnet 4.6 and Haiku 3.5;
 * 4,096 for Opus 4.5/4.6 and Haiku 4.5) is simply not cached, at no cost, so guessing the count
 * here (the kernel only estimates tokens) could only lose hits.
 */
import type {
  ContentBlockParam,
  MessageCreateParamsBase,
  MessageParam,
  TextBlockParam,
} from "@anthropic-ai/sdk/resources/messages";
import type { ChatMessage, LlmRequest } from "../../sdk/index.js";

const EPHEMERAL = { type: "ephemeral" } as const;

/** The API's limit on breakpoints in one request. */
export const MAX_BREAKPOINTS = 4;

/**
 * The body with its breakpoints; `request.cache` must be set. `contextAt` is the message the turn's
 * context heads (-1: none), `body.system` the system prompt as sent (placeContext's).
 */
export function withBreakpoints(
  body: MessageCreateParamsBase,
  request: LlmRequest,
  contextAt = -1,
): MessageCreateParamsBase {
  const sent = typeof body.system === "string" ? body.system : "";
  const stable = sent.slice(0, request.cache?.stable_chars ?? 0);
  const volatile = sent.slice(stable.length);
  const system: TextBlockParam[] = [
    ...(stable ? [{ type: "text" as const, text: stable, cache_control: EPHEMERAL }] : []),
    ...(volatile ? [{ type: "text" as const, text: volatile }] : []),
  ];
  const tools = body.tools?.map((tool, i, all) =>
    !stable && i === all.length - 1 ? { ...tool, cache_control: EPHEMERAL } : tool,
  );
  return {
    ...body,
    ...(tools ? { tools } : {}),
    ...(system.length > 0 ? { system } : {}),
    messages: markMessages(body.messages, request.messages, contextAt),
  };
}

/** Breakpoints on the last message before the turn's context (or newest user message), and on the last one. */
function markMessages(wire: MessageParam[], messages: ChatMessage[], contextAt: number): MessageParam[] {
  const user = contextAt >= 0 ? contextAt : messages.findLastIndex((m) => m.role === "user");
  const marked = [user - 1, messages.length - 1].filter((i) => i >= 0);
  const positions = wirePositions(messages);
  const out = wire.map((m) => ({ ...m }));
  for (const index of new Set(marked)) {
    const at = positions[index];
    const message = at ? out[at.message] : undefined;
    if (!at || !message) continue;
    const blocks: ContentBlockParam[] =
      typeof message.content === "string"
        ? message.content
          ? [{ type: "text", text: message.content }]
          : []
        : [...message.content];
    const b = at.block ?? blocks.length - 1;
    const block = blocks[b];
    // An empty message has no block to mark (the API refuses empty text blocks).
    if (!block || block.type === "thinking" || block.type === "redacted_thinking") continue;
    blocks[b] = { ...block, cache_control: EPHEMERAL };
    message.content = blocks;
  }
  return out;
}

/**
 * Where each message lands on the wire, as toWireMessages (wire.ts) groups them: consecutive tool
 * results share one user message, one block each; any other message is a message of its own.
 */
function wirePositions(messages: ChatMessage[]): { message: number; block?: number }[] {
  const out: { message: number; block?: number }[] = [];
  let wire = -1;
  let block = 0;
  let inResults = false;
  for (const message of messages) {
    if (message.role === "tool") {
      if (inResults) block += 1;
      else {
        wire += 1;
        block = 0;
        inResults = true;
      }
      out.push({ message: wire, block });
    } else {
      inResults = false;
      wire += 1;
      out.push({ message: wire });
    }
  }
  return out;
}
