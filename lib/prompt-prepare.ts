/**
 * A turn's prompt, from `turn.prepare` to the request a driver gets: the one code path both a real
 * turn (kernel/turns/agent-loop.ts) and its preview (`spar context`, lib/turn-context.ts) take, so
 * the preview cannot drift from what is sent.
 */
import type { PromptParts, RingHooks, TurnContext } from "../sdk/hooks.js";
import { quoteHeading, renderContext } from "../sdk/turn-context.js";
import type { ChatMessage, LlmRequest } from "../sdk/types.js";

/** What one `turn.prepare` tap made of the prompt: the prompt before it and after it. */
export type PrepareStep = (tap: string, before: PromptParts, after: PromptParts) => void;

type PrepareTap = (
  prompt: PromptParts,
  context: TurnContext,
) => PromptParts | undefined | Promise<PromptParts | undefined>;

/**
 * Runs the `turn.prepare` waterfall tap by tap, in the hook's order, as tapable would (a tap that
 * answers nothing passes the prompt on unchanged), so `step` can see what each tap (each named by
 * its plugin id, `ring` for the kernel's own) added.
 *
 * @example
 * const prompt = await preparePrompt(hooks, { system, messages, tools }, { fighter, bout_id });
 */
export async function preparePrompt(
  hooks: RingHooks,
  prompt: PromptParts,
  context: TurnContext,
  step?: PrepareStep,
): Promise<PromptParts> {
  let current = prompt;
  for (const tap of hooks.turn.prepare.taps) {
    const next = await (tap.fn as PrepareTap)(current, context);
    if (next === undefined) continue;
    step?.(tap.name, current, next);
    current = next;
  }
  return current;
}

/** All the text the prompt adds to its messages, stable part first: for estimates and budgets. */
export function systemText(prompt: Pick<PromptParts, "system" | "volatile">): string {
  return prompt.system + (prompt.volatile ?? "");
}

/**
 * The request's prompt: the system prompt (its stable part only), the messages, the per-turn
 * context (`volatile`, headed as Spar's) to go before the turn's own messages — the last
 * `turnLength` of them —, the offered moves as tool definitions in the order the kernel listed
 * them, and, when the provider's cache is on (`cacheKey` given), where the stable prefix ends.
 */
export function promptRequest(
  prompt: PromptParts,
  cacheKey?: string,
  turnLength = 1,
): Pick<LlmRequest, "system" | "messages" | "context" | "turn_start" | "tools" | "cache"> {
  const context = renderContext(prompt.volatile ?? "");
  return {
    system: prompt.system,
    messages: prompt.messages.map(quoted),
    ...(context ? { context, turn_start: Math.max(0, prompt.messages.length - turnLength) } : {}),
    tools: prompt.tools.map((m) => ({
      name: m.name,
      description: m.description,
      input_schema: m.input_schema,
    })),
    ...(cacheKey ? { cache: { key: cacheKey, stable_chars: prompt.system.length } } : {}),
  };
}

/** A user's or a tool's message with the context heading quoted (quoteHeading): it is not Spar's. */
function quoted(message: ChatMessage): ChatMessage {
  if (message.role === "assistant") return message;
  const content = quoteHeading(message.content);
  return content === message.content ? message : { ...message, content };
}
