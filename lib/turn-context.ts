/**
 * What a fighter's next turn sends, part by part (`spar context`, GET /api/v1/fighters/:id/context):
 * the turn's own moves, history and `turn.prepare` chain (lib/prompt-prepare.ts), run as a dry run,
 * so the view cannot drift from the prompt. The turn runner takes its moves and history from here too.
 */
import { matchGrants } from "../kernel/fighters/fighter-manifest.js";
import { SparError } from "../sdk/errors.js";
import type { PromptParts, RingHooks } from "../sdk/hooks.js";
import type { MoveListing, PromptContext, PromptPart } from "../sdk/services.js";
import type { Store } from "../sdk/store-types.js";
import { estimateTokens, messageTokens } from "../sdk/tokens.js";
import type { ChatMessage, FighterRow, ModelSettings, MoveDeclaration } from "../sdk/types.js";
import { costMicros, type PriceBook } from "./pricing.js";
import { preparePrompt, promptRequest } from "./prompt-prepare.js";
import { promptHistory } from "./turn-history.js";

/**
 * The moves of a turn: the declared ones and those plugins offer at run time (`move.list`); the
 * model is offered exactly those its fighter holds a grant for, in the kernel's order.
 */
export async function turnMoves(
  hooks: RingHooks,
  declaredMoves: ReadonlyMap<string, MoveListing>,
  fighter: FighterRow,
): Promise<{ offered: MoveDeclaration[]; declared: ReadonlyMap<string, MoveDeclaration> }> {
  const dynamic = await hooks.move.list.promise([], { fighter });
  const declared = new Map<string, MoveDeclaration>(declaredMoves);
  for (const move of dynamic) if (!declared.has(move.name)) declared.set(move.name, move);
  const grants = fighter.manifest.capabilities ?? [];
  return { offered: [...declared.values()].filter((m) => matchGrants(grants, m).length > 0), declared };
}

/** The bout's history as stored: its uncompacted tail, and the turns in it that did not complete. */
export async function boutHistory(store: Store, boutId: string, turnId?: string): Promise<ChatMessage[]> {
  const [messages, unfinished] = await Promise.all([
    store.messages.tail(boutId),
    store.turns.unfinished(boutId),
  ]);
  return promptHistory(messages, unfinished, turnId);
}

export interface ContextPreviewDeps {
  hooks: RingHooks;
  store: () => Store;
  declaredMoves: ReadonlyMap<string, MoveListing>;
  defaultModel: ModelSettings;
  cacheKeyFor: (fighterId: string, provider: string) => string | undefined;
  prices: PriceBook;
}

/** What the kernel's own parts and the bundled plugins' additions are called in the view. */
const PART_OF: Record<string, string> = {
  "identity-creed": "creed",
  "moves-skills": "skills",
  "moves-mcp": "mcp",
  ring: "summary",
};

/** The parts always listed, even when empty, so the view answers "is there any?" too. */
const ALWAYS = ["system", "creed", "skills", "tools", "summary", "memory", "history", "message"];

/**
 * The preview of a fighter's next turn. The message it is for is not known yet: `message` (default
 * "") stands in for it, so skills a real message would name are not counted unless one is given.
 */
export function createContextPreview(deps: ContextPreviewDeps) {
  return async (
    fighter: FighterRow,
    options: { bout_id?: string; message?: string } = {},
  ): Promise<PromptContext> => {
    const store = deps.store();
    const bout = options.bout_id
      ? await store.bouts.get(options.bout_id)
      : await store.bouts.latest(fighter.id);
    if (options.bout_id && bout?.fighter_id !== fighter.id)
      throw new SparError("BOUT_NOT_FOUND", `fighter "${fighter.name}" has no bout ${options.bout_id}`);
    const message = options.message ?? "";
    const text = { role: "user" as const, content: message };
    // As the message path picks it: the fighter's own model, else the routed default.
    const model =
      fighter.manifest.model ??
      (await deps.hooks.provider.route.promise(deps.defaultModel, { fighter, text: message }));
    const history = bout ? await boutHistory(store, bout.id) : [];
    const { offered } = await turnMoves(deps.hooks, deps.declaredMoves, fighter);
    const system: PromptPart[] = [part("system", "manifest", true, fighter.manifest.system_prompt)];
    const volatile: PromptPart[] = [];
    const prompt = await preparePrompt(
      deps.hooks,
      { system: fighter.manifest.system_prompt, messages: [...history, text], tools: offered },
      { fighter, bout_id: bout?.id ?? "", dry_run: true },
      (tap, before, after) => {
        added(system, tap, true, before.system, after.system);
        added(volatile, tap, false, before.volatile ?? "", after.volatile ?? "");
      },
    );
    const cacheKey = deps.cacheKeyFor(fighter.id, model.provider);
    const request = promptRequest(prompt, cacheKey);
    const tools: PromptPart = {
      part: "tools",
      source: "kernel",
      stable: true,
      tokens: request.tools.length > 0 ? estimateTokens(JSON.stringify(request.tools)) : 0,
      count: request.tools.length,
    };
    // In the order they are sent: the varying parts after the history, before the message.
    const [memory, past, last] = historyParts(prompt, history.length);
    const parts = withEmpty([...system, tools, memory, past, ...volatile, last]);
    const input = parts.reduce((n, p) => n + p.tokens, 0);
    const stable = parts.filter((p) => p.stable).reduce((n, p) => n + p.tokens, 0);
    const price = deps.prices.price(model);
    const cost = (cached: number) =>
      price ? costMicros(price, { input_tokens: input, output_tokens: 0, cached_tokens: cached }) : 0;
    return {
      fighter: fighter.name,
      bout_id: bout?.id ?? null,
      model: { provider: model.provider, model: model.model },
      message,
      parts,
      input_tokens: input,
      cache: { enabled: cacheKey !== undefined, stable_tokens: stable },
      cost: price
        ? {
            uncached_micros: cost(0),
            cached_micros: cacheKey ? cost(stable) : null,
            currency: price.currency,
          }
        : null,
    };
  };
}

export type ContextPreview = ReturnType<typeof createContextPreview>;

function part(name: string, source: string, stable: boolean, text: string): PromptPart {
  return { part: name, source, stable, tokens: estimateTokens(text) };
}

/**
 * What a tap added to one part of the system prompt: what it appended, or, when it rewrote the part
 * (a gorilla's prompt in place of its fighter's), the whole part, now its.
 */
function added(parts: PromptPart[], tap: string, stable: boolean, before: string, after: string): void {
  if (after === before) return;
  const name = PART_OF[tap] ?? (tap.startsWith("scheduler-") ? "gorilla" : tap);
  if (after.startsWith(before)) {
    parts.push(part(name, tap, stable, after.slice(before.length)));
    return;
  }
  parts.splice(0, parts.length, part(name, tap, stable, after));
}

/**
 * The messages: what memory_recall brought back (memory reaches the prompt only through that move's
 * results, kept in the history), the rest of the history, and the message.
 */
function historyParts(prompt: PromptParts, historyCount: number): [PromptPart, PromptPart, PromptPart] {
  const history = prompt.messages.slice(0, historyCount);
  const recalled = history.filter((m) => m.role === "tool" && m.name === "memory_recall");
  const tokens = (messages: ChatMessage[]) => messages.reduce((n, m) => n + messageTokens(m), 0);
  const last = prompt.messages.slice(historyCount);
  return [
    {
      part: "memory",
      source: "moves-memory",
      stable: false,
      tokens: tokens(recalled),
      count: recalled.length,
    },
    {
      part: "history",
      source: "kernel",
      stable: false,
      tokens: tokens(history) - tokens(recalled),
      count: history.length - recalled.length,
    },
    { part: "message", source: "kernel", stable: false, tokens: tokens(last) },
  ];
}

/** Every part of ALWAYS present (an empty one where nothing added it), others as they came. */
function withEmpty(parts: PromptPart[]): PromptPart[] {
  const missing = ALWAYS.filter((name) => !parts.some((p) => p.part === name)).map((name) => ({
    part: name,
    source: "none",
    stable: false,
    tokens: 0,
  }));
  return [...parts, ...missing];
}
