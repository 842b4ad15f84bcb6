import { preparePrompt, systemText } from "../../lib/prompt-prepare.js";
import type { SparConfig } from "../../sdk/config.js";
import { SparError } from "../../sdk/errors.js";
import type { EventBus } from "../../sdk/events.js";
import type { RingHooks, TurnSummary } from "../../sdk/hooks.js";
import type { Logger } from "../../sdk/index.js";
import type { Store } from "../../sdk/store-types.js";
import { contextTokens, estimateTokens } from "../../sdk/tokens.js";
import type { ModelSettings } from "../../sdk/types.js";
import { phaseStage } from "../host/tap-rules.js";
import { compactionBoundary } from "./compaction.js";
import type { HistoryCache } from "./history-cache.js";

export interface AftercareDeps {
  /** Compacting a bout drops its kept history: the next turn reads what compaction left. */
  histories: HistoryCache;
  store: () => Store;
  events: EventBus;
  hooks: RingHooks;
  config: SparConfig;
  log: Logger;
  activate: (event: string) => Promise<void>;
  contextWindow: (model: ModelSettings) => number;
}

/**
 * What the kernel does around a turn besides the model call: the bout's summary in the prompt; after
 * the reply, `turn.after` (the identity plugin's reflection) and compaction, in the fighter's queue
 * before its next turn.
 */
export function createAftercare(deps: AftercareDeps) {
  const { events, config } = deps;

  // Last in line, after plugins' additions (the Creed): what compaction replaced, summarized.
  deps.hooks.turn.prepare.tapPromise({ name: "ring", stage: phaseStage("late") }, async (prompt, context) => {
    const summary = (await deps.store().summaries.get(context.bout_id))?.summary;
    const added = `\n\n## Earlier in this conversation (summary)\n${summary}`;
    return summary ? { ...prompt, volatile: `${prompt.volatile ?? ""}${added}` } : prompt;
  });

  /** Logs a failure of `what` for the fighter named, instead of throwing it. */
  const warn = (what: string, f: TurnSummary["fighter"]) => (err: unknown) =>
    deps.log.warn(`${what} failed`, { fighter: f.name, fighter_id: f.id, error: (err as Error).message });

  /** Queued after the reply. Failures are logged, never thrown. */
  async function later(turn: TurnSummary): Promise<void> {
    await deps.hooks.turn.after.promise(turn).catch(warn("turn.after", turn.fighter));
    await compact(turn).catch(warn("compaction", turn.fighter));
  }

  async function compact(turn: TurnSummary): Promise<void> {
    const store = deps.store();
    const { strategy: name, threshold_percent, keep_recent } = config.memory.compaction;
    const window = deps.contextWindow(turn.model);
    const threshold = (window * threshold_percent) / 100;
    // The turn's own estimate first: most turns are far below, and need no second look.
    if (turn.context_tokens <= threshold) return;
    const live = await store.messages.tail(turn.bout_id);
    const previous = (await store.summaries.get(turn.bout_id))?.summary;
    // The prompt as the model would see it next, plugins' additions (the Creed) included.
    const prompt = await preparePrompt(
      deps.hooks,
      { system: turn.fighter.manifest.system_prompt, messages: live, tools: [] },
      { fighter: turn.fighter, bout_id: turn.bout_id, dry_run: true },
    );
    const system = systemText(prompt);
    if (contextTokens(system, prompt.messages) <= threshold) return;
    // keep_recent alone may not be enough (a few huge messages): then fewer are kept.
    const through = compactionBoundary(live, keep_recent, threshold - estimateTokens(system));
    if (through === undefined) return;
    await deps.activate(`onCompaction:${name}`);
    const strategy = await deps.hooks.compaction.resolve.promise(name);
    if (!strategy)
      throw new SparError("CONFIG_INVALID", `no plugin provides the compaction strategy "${name}"`);
    const input = {
      fighter: turn.fighter,
      bout_id: turn.bout_id,
      turn_id: turn.turn_id,
      origin: turn.origin,
      model: turn.model,
      messages: live.filter((m) => m.seq <= through),
      previous_summary: previous,
      summary_budget_tokens: Math.floor(window / 4),
    };
    // The facts go to memory (`flush_facts`) beside the summary, not after it; a failed flush is logged.
    const flushed = config.memory.compaction.flush_facts
      ? deps.hooks.compaction.flush.promise([], input).catch(warn("memory flush", turn.fighter))
      : undefined;
    const [{ summary }] = await Promise.all([strategy.compact(input), flushed]);
    const compacted = await store.messages.compact(turn.bout_id, through, summary);
    deps.histories.drop(turn.bout_id);
    events.publish({
      kind: "compaction.applied",
      fighter_id: turn.fighter.id,
      bout_id: turn.bout_id,
      strategy: name,
      compacted,
      through_seq: through,
    });
  }

  return { later };
}

export type Aftercare = ReturnType<typeof createAftercare>;
