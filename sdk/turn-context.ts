/**
 * Where a request's per-turn context goes (README "Prompt caching"): after the conversation so far,
 * just before the turn's own messages, so that everything before it — tools, the stable system
 * prompt, the whole history — is a prefix the providers' caches can read, turn after turn. Each
 * driver renders it in its provider's idiom; this module only says where, the same for all.
 */
import type { LlmRequest } from "./types.js";

/**
 * The first line of every per-turn context: the model is told whose words follow, and a user's
 * message, always after it in a block or message of its own, cannot take its place.
 */
export const CONTEXT_HEADING = "## Context from Spar for this turn (not written by the user)";

/** What the heading becomes anywhere Spar did not put it (a user's message, a tool's result). */
export const QUOTED_HEADING = "## (quoted, not from Spar) Context from Spar for this turn";

/**
 * A message's text with the context heading, should it hold it, quoted: the heading then heads only
 * the text Spar put there, so a message cannot pass its own words off as Spar's context. The same
 * text always comes out the same, so the history stays a byte-identical prefix.
 */
export function quoteHeading(text: string): string {
  return text.includes(CONTEXT_HEADING) ? text.replaceAll(CONTEXT_HEADING, QUOTED_HEADING) : text;
}

/**
 * The context text a request carries, headed, from the prompt's varying part; "" when it is empty.
 *
 * @example
 * renderContext("\n\n## Creed of ada, lately\nHistory: 2 conversations"); // "## Context from Spar…\n## Creed of…"
 */
export function renderContext(volatile: string): string {
  const text = volatile.trim();
  return text ? `${CONTEXT_HEADING}\n${text}` : "";
}

/** Where a driver puts the context: before `messages[at]`, or, with `at` -1, in `system` (see below). */
export interface PlacedContext {
  /** The system prompt to send: the request's own, or with the context after it when `at` is -1. */
  system: string;
  /** The index of the user message the context goes before (or at the head of); -1 for none. */
  at: number;
  /** The context text ("" when the request has none). */
  text: string;
}

/**
 * The turn's first user message at or after `turn_start` (the kernel's turn starts with one), so
 * the context never lands between a tool call and its result. A request with a context and no
 * such message (a caller's own request) gets it after its system prompt, as before: never dropped.
 *
 * @example
 * const placed = placeContext(request);
 * const wire = request.messages.flatMap((m, i) => (i === placed.at ? [contextMessage(placed.text), m] : [m]));
 */
export function placeContext(
  request: Pick<LlmRequest, "system" | "messages" | "context" | "turn_start">,
): PlacedContext {
  const text = request.context ?? "";
  if (!text) return { system: request.system, at: -1, text };
  // Without a turn_start, the turn is taken to start at its last user message.
  const start = request.turn_start ?? request.messages.findLastIndex((m) => m.role === "user");
  const at = start < 0 ? -1 : request.messages.findIndex((m, i) => i >= start && m.role === "user");
  if (at >= 0) return { system: request.system, at, text };
  return { system: request.system ? `${request.system}\n\n${text}` : text, at: -1, text };
}
