import { contextTokens } from "../../sdk/tokens.js";
import type { ModelSettings, ProviderDeclaration, StoredMessage } from "../../sdk/types.js";

/** A model with no `context_window` whose provider's manifest names no window for it. */
export const FALLBACK_WINDOW = 8_192;

/**
 * The context window of a model setting: its own `context_window`, else the first of its provider's
 * declared `context_windows` (plugin.json) whose pattern matches the model name (without a
 * `vendor/` prefix), else FALLBACK_WINDOW.
 */
export function contextWindows(
  providers: ReadonlyMap<string, ProviderDeclaration>,
): (model: ModelSettings) => number {
  const patterns = new Map(
    [...providers].map(([id, d]) => [
      id,
      (d.context_windows ?? []).map((w) => [new RegExp(w.match), w.tokens] as const),
    ]),
  );
  return (model) => {
    if (model.context_window) return model.context_window;
    const name = model.model.toLowerCase().replace(/^[\w.-]+\//, "");
    return patterns.get(model.provider)?.find(([pattern]) => pattern.test(name))?.[1] ?? FALLBACK_WINDOW;
  };
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
