import { compactionBoundary, contextTokens, contextWindowFor } from "./compaction.js";
import type { SparConfig } from "./config.js";
import {
  countConversation,
  initialCreed,
  isSubstantial,
  mergeObservations,
  parseObservations,
  REFLECTION_SYSTEM,
  reflectionPrompt,
  renderCreed,
} from "./creed.js";
import { SparError } from "./errors.js";
import type { EventBus } from "./events.js";
import type { RingHooks } from "./hooks.js";
import type { Logger } from "./sdk.js";
import type { CreedDocument, Store } from "./store-types.js";
import type { ChatMessage, FighterRow, LlmRequest, LlmResponse, ModelSettings } from "./types.js";

/** A committed turn, as the Creed, decay, reflection and compaction see it. */
export interface CompletedTurn {
  fighter: FighterRow;
  bout_id: string;
  new_bout: boolean;
  model: ModelSettings;
  messages: ChatMessage[];
}

export interface AftercareDeps {
  store: () => Store;
  events: EventBus;
  hooks: RingHooks;
  config: SparConfig;
  log: Logger;
  llm: (model: ModelSettings, request: Omit<LlmRequest, "model">) => Promise<LlmResponse>;
  activate: (event: string) => Promise<void>;
}

/**
 * What happens around a turn besides the model call: the Creed and the bout summary rendered into
 * the prompt; after the turn, the Creed's counters, memory decay, the reflection call and compaction.
 */
export function createAftercare(deps: AftercareDeps) {
  const { events, config } = deps;
  const now = () => new Date().toISOString();

  async function creedOf(fighter: FighterRow): Promise<CreedDocument> {
    return (await deps.store().creeds.get(fighter.name)) ?? initialCreed(fighter.manifest, now());
  }

  async function saveCreed(
    fighter: FighterRow,
    creed: CreedDocument,
    reason: "conversation" | "reflection" | "edit",
  ): Promise<void> {
    await deps.store().creeds.put(fighter.name, creed);
    events.publish({ kind: "creed.updated", fighter_id: fighter.id, name: fighter.name, reason });
  }

  /** The system prompt: the manifest's, the Creed, and the summary of what compaction replaced. */
  async function systemPrompt(fighter: FighterRow, boutId: string): Promise<string> {
    const store = deps.store();
    const [creed, relationships, stored] = await Promise.all([
      creedOf(fighter),
      store.relationships.list(fighter.name),
      store.summaries.get(boutId),
    ]);
    const parts = [fighter.manifest.system_prompt, renderCreed(fighter.name, creed, relationships)];
    const summary = stored?.summary;
    if (summary) parts.push(`## Earlier in this conversation (summary)\n${summary}`);
    return parts.join("\n\n");
  }

  /** Right after the turn is committed: counters always, decay of the fighter's memories. */
  async function afterTurn(turn: CompletedTurn): Promise<void> {
    const creed = countConversation(
      await creedOf(turn.fighter),
      { new_bout: turn.new_bout, messages: turn.messages.length },
      now(),
    );
    await saveCreed(turn.fighter, creed, "conversation");
    await deps.store().memories.decay(turn.fighter.id, config.memory.decay.rate_per_day, now());
  }

  /** Queued after the reply: the reflection call and compaction. Failures are logged, never thrown. */
  async function later(turn: CompletedTurn): Promise<void> {
    await reflect(turn).catch((err: unknown) =>
      deps.log.warn("creed reflection failed", { fighter: turn.fighter.name, error: (err as Error).message }),
    );
    await compact(turn).catch((err: unknown) =>
      deps.log.warn("compaction failed", { fighter: turn.fighter.name, error: (err as Error).message }),
    );
  }

  async function reflect(turn: CompletedTurn): Promise<void> {
    const user = turn.messages.find((m) => m.role === "user")?.content ?? "";
    const reply = turn.messages.findLast((m) => m.role === "assistant")?.content ?? "";
    if (!isSubstantial(user, reply, config.creed)) return;
    const answer = await deps.llm(turn.model, {
      system: REFLECTION_SYSTEM,
      messages: [{ role: "user", content: reflectionPrompt(user, reply) }],
      tools: [],
    });
    const observations = parseObservations(answer.text);
    if (observations.length === 0) return;
    const creed = mergeObservations(
      await creedOf(turn.fighter),
      observations,
      now(),
      config.memory.decay,
      config.creed.max_observations,
    );
    await saveCreed(turn.fighter, creed, "reflection");
  }

  async function compact(turn: CompletedTurn): Promise<void> {
    const store = deps.store();
    const { strategy: name, threshold_percent, keep_recent } = config.memory.compaction;
    const live = (await store.messages.list(turn.bout_id)).filter((m) => !m.compacted);
    const window = contextWindowFor(turn.model);
    if (
      contextTokens(await systemPrompt(turn.fighter, turn.bout_id), live) <=
      (window * threshold_percent) / 100
    )
      return;
    const through = compactionBoundary(live, keep_recent);
    if (through === undefined) return;
    await deps.activate(`onCompaction:${name}`);
    const strategy = await deps.hooks.compaction.resolve.promise(name);
    if (!strategy)
      throw new SparError("CONFIG_INVALID", `no plugin provides the compaction strategy "${name}"`);
    const { summary } = await strategy.compact({
      fighter: turn.fighter,
      bout_id: turn.bout_id,
      model: turn.model,
      messages: live.filter((m) => m.seq <= through),
      previous_summary: (await store.summaries.get(turn.bout_id))?.summary,
      summary_budget_tokens: Math.floor(window / 4),
    });
    const compacted = await store.messages.compact(turn.bout_id, through, summary);
    events.publish({
      kind: "compaction.applied",
      fighter_id: turn.fighter.id,
      bout_id: turn.bout_id,
      strategy: name,
      compacted,
      through_seq: through,
    });
  }

  return {
    creedOf,
    systemPrompt,
    afterTurn,
    later,
    /** PUT creed: replaces identity, traits and directives; what was learned stays. */
    async editCreed(
      fighter: FighterRow,
      edit: Pick<CreedDocument, "identity" | "traits" | "directives">,
    ): Promise<CreedDocument> {
      const creed = { ...(await creedOf(fighter)), ...edit, updated_at: now() };
      await saveCreed(fighter, creed, "edit");
      return creed;
    },
    /** A fighter-to-fighter exchange, on both sides' relationship records. */
    async recordExchange(from: FighterRow, to: FighterRow, content: string): Promise<void> {
      const at = now();
      const gist = content.replace(/\s+/g, " ").slice(0, 80);
      const { relationships } = deps.store();
      await relationships.record(from.name, { with: to.name, kind: "fighter" }, `last sent: ${gist}`, at);
      await relationships.record(to.name, { with: from.name, kind: "fighter" }, `last heard: ${gist}`, at);
    },
  };
}

export type Aftercare = ReturnType<typeof createAftercare>;
