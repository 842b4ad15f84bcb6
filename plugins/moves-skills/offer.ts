import type { ChatMessage, MoveDeclaration } from "../../sdk/index.js";

/** The moves of this plugin: always offered, whatever else is deferred. */
export const META_MOVES = ["skill_search", "skill_load", "move_search"] as const;

/**
 * Moves of this plugin offered only once the bout needs them: `skill_read`, from the skill_load that
 * listed files on (the "hello" prompt stays as small as before). Still callable before that.
 */
export const LATENT_MOVES: ReadonlySet<string> = new Set(["skill_read"]);

export interface OfferSettings {
  /** Past this many tools, only the core, the meta moves and the activated ones are offered. */
  defer_above: number;
  core: readonly string[];
}

/** Every move the bout's messages have called: once used, a move stays offered in that bout. */
export function calledMoves(messages: readonly ChatMessage[]): string[] {
  return messages.flatMap((m) => (m.role === "assistant" ? (m.tool_calls ?? []).map((c) => c.name) : []));
}

/**
 * The tools the model is shown: all of them when they are few (then `move_search` has nothing to
 * find and is left out), but a latent move not yet activated; otherwise the core set, the meta moves, and the moves this bout activated
 * or called, in the order the kernel listed them (a stable order keeps providers' prompt caches).
 * Nothing is taken from the fighter: a deferred move is still callable, one `move_search` away.
 */
export function offerTools(
  tools: readonly MoveDeclaration[],
  activated: Iterable<string>,
  settings: OfferSettings,
): { offered: MoveDeclaration[]; deferred: MoveDeclaration[] } {
  const active = new Set(activated);
  const latent = (t: MoveDeclaration) => LATENT_MOVES.has(t.name) && !active.has(t.name);
  if (tools.length <= settings.defer_above) {
    return { offered: tools.filter((t) => t.name !== "move_search" && !latent(t)), deferred: [] };
  }
  const keep = new Set<string>([...settings.core, ...META_MOVES, ...active]);
  const offered: MoveDeclaration[] = [];
  const deferred: MoveDeclaration[] = [];
  for (const tool of tools) {
    if (keep.has(tool.name)) offered.push(tool);
    else if (!latent(tool)) deferred.push(tool);
  }
  return { offered, deferred };
}

/**
 * One line for the system prompt naming what is deferred, by capability, so the model knows to look:
 * stable for a fighter (it changes only when its grants or the installed moves do).
 */
export function deferredNote(deferred: readonly MoveDeclaration[]): string {
  if (deferred.length === 0) return "";
  const kinds = [...new Set(deferred.map((m) => m.capability))].sort();
  return (
    `\n\nMore tools are available than are listed (${deferred.length}, for: ${kinds.join(", ")}). ` +
    "Call move_search with what you need to do; the tools it finds are offered from then on."
  );
}
