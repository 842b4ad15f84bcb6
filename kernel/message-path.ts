import { createAftercare, type TurnRecord } from "./aftercare.js";
import { runTurn } from "./agent-loop.js";
import { contextTokens, estimateTokens } from "./compaction.js";
import type { SparConfig } from "./config.js";
import { SparError } from "./errors.js";
import type { EventBus } from "./events.js";
import { hasCapability } from "./fighter-manifest.js";
import type { FighterRegistry, LiveFighter } from "./fighter-registry.js";
import type { RingHooks } from "./hooks.js";
import type { PluginHost } from "./plugin-host.js";
import { callProvider, policyFor } from "./provider-call.js";
import type { CredentialCheck } from "./provider-check.js";
import { providerError } from "./provider-errors.js";
import { createQuotaGuard } from "./quota-guard.js";
import { routeModel } from "./routing.js";
import type { Logger } from "./sdk.js";
import type { FighterMessageResult, MessageOptions, MoveListing } from "./services.js";
import type { Store } from "./store-types.js";
import type { LlmDriver, LlmRequest, LlmResponse, ModelSettings, MoveDeclaration } from "./types.js";

/** The reply a turn is reserved for when its model sets no `max_tokens`. */
export const RESERVED_OUTPUT_TOKENS = 1024;

export interface MessagePathDeps {
  config: SparConfig;
  hooks: RingHooks;
  events: EventBus;
  host: PluginHost;
  log: Logger;
  store: () => Store;
  fighters: FighterRegistry;
  declaredMoves: ReadonlyMap<string, MoveListing>;
  credentialFor: (settings: ModelSettings) => CredentialCheck;
}

/**
 * The message data path (DESIGN §4): bout, status, the agent loop, the durable commit, then the
 * Creed, decay, usage hooks and the completion event. One turn per fighter at a time; the reflection
 * and compaction that follow a turn run in the same queue, after the reply, before the next turn.
 */
export function createMessagePath(deps: MessagePathDeps) {
  const { config, hooks, events, host, fighters } = deps;

  async function resolveDriver(settings: ModelSettings): Promise<LlmDriver> {
    const check = deps.credentialFor(settings);
    if (!check.ok)
      throw new SparError("PROVIDER_ERROR", check.problem, { provider: settings.provider, retryable: false });
    await host.activate(`onProvider:${settings.provider}`);
    const driver = await hooks.provider.resolve.promise(settings, check.credential);
    if (!driver)
      throw providerError(settings.provider, "no active plugin answered for this provider", {
        retryable: false,
      });
    return driver;
  }

  /** One model call under the provider policy, for the kernel's and plugins' own uses (reflection, summaries). */
  async function llm(model: ModelSettings, request: Omit<LlmRequest, "model">): Promise<LlmResponse> {
    return callProvider(await resolveDriver(model), { ...request, model }, policyFor(model));
  }

  const aftercare = createAftercare({
    store: deps.store,
    events,
    hooks,
    config,
    log: deps.log,
    llm,
    activate: (event) => host.activate(event),
  });

  // The kernel's own prompt tap, first in line: the Creed and the bout's summary join the system prompt.
  hooks.turn.prepare.tapPromise({ name: "ring", stage: -100 }, async (prompt, context) => ({
    ...prompt,
    system: aftercare.systemPrompt(context.fighter, context.bout_id),
  }));

  async function moveHandler(name: string) {
    await host.activate(`onMove:${name}`);
    return hooks.move.resolve.promise(name);
  }

  const quotas = createQuotaGuard({ config, events, fighters });

  async function message(
    idOrName: string,
    text: string,
    opts: MessageOptions = {},
  ): Promise<FighterMessageResult> {
    const live = fighters.find(idOrName);
    const model = routeModel(text, live.row.manifest.model, config.model_routing, config.default_model).model;
    const reservation = quotas.admit(live, estimateTurnTokens(live, text, model));
    const turn = live.queue.then(async () => {
      let tokens = 0;
      try {
        quotas.start(live, reservation);
        const done = await fight(live, text, model, opts);
        tokens = done.result.usage.input_tokens + done.result.usage.output_tokens;
        return done;
      } finally {
        quotas.settle(live, reservation, tokens);
      }
    });
    live.queue = turn.then(
      ({ record }) => aftercare.later(record),
      () => undefined,
    );
    return (await turn).result;
  }

  async function fight(
    live: LiveFighter,
    text: string,
    model: ModelSettings,
    opts: MessageOptions,
  ): Promise<{ result: FighterMessageResult; record: TurnRecord }> {
    const db = deps.store();
    if (!fighters.isLive(live))
      throw new SparError("FIGHTER_NOT_FOUND", `fighter "${live.row.name}" was killed`);
    let bout = opts.bout_id ? db.bouts.get(opts.bout_id) : db.bouts.latest(live.row.id);
    if (opts.bout_id && (!bout || bout.fighter_id !== live.row.id)) {
      throw new SparError("BOUT_NOT_FOUND", `fighter "${live.row.name}" has no bout ${opts.bout_id}`);
    }
    const newBout = !bout;
    if (!bout) {
      bout = db.bouts.create(live.row.id);
      events.publish({ kind: "bout.started", fighter_id: live.row.id, bout_id: bout.id });
    }
    const boutId = bout.id;
    events.publish({ kind: "message.received", fighter_id: live.row.id, bout_id: boutId });
    fighters.setStatus(live, "fighting");
    const offered: MoveDeclaration[] = [...deps.declaredMoves.values()].filter((m) =>
      hasCapability(live.row.manifest.capabilities ?? [], m.capability),
    );
    const history = db.messages.list(boutId).filter((m) => !m.compacted);
    const { result, messages } = await runTurn(
      {
        fighter: live.row,
        bout_id: boutId,
        model,
        history,
        user: { role: "user", content: text },
        offered,
        declared: deps.declaredMoves,
        maxIterations: live.row.manifest.max_iterations ?? config.agent.max_iterations,
        loopGuardRepeats: config.agent.loop_guard_repeats,
        toolTimeoutMs: config.agent.tool_timeout_s * 1000,
        onDelta: opts.onDelta,
        request_id: opts.request_id,
      },
      { hooks, events, driver: resolveDriver, move: moveHandler },
    );
    live.contextTokens = contextTokens(live.row.manifest.system_prompt, [...history, ...messages]);
    // Durable before acknowledged: the whole turn is committed in one transaction first.
    db.messages.append(boutId, messages);
    db.usage.record(
      live.row.id,
      { provider: model.provider, model: model.model, ...result.usage },
      new Date().toISOString(),
    );
    const record: TurnRecord = { fighter: live.row, bout_id: boutId, new_bout: newBout, model, messages };
    aftercare.afterTurn(record);
    await hooks.turn.end.promise({
      fighter: live.row,
      bout_id: boutId,
      new_messages: messages,
      usage: result.usage,
      iterations: result.iterations,
    });
    events.publish({
      kind: "message.completed",
      fighter_id: live.row.id,
      bout_id: boutId,
      usage: result.usage,
      iterations: result.iterations,
      model: result.model,
      stop_reason: result.stop_reason,
    });
    return { result: { bout_id: boutId, ...result }, record };
  }

  /**
   * What a turn is reserved against the token quota before it runs: the context it will send (as
   * the fighter's last turn left it, or its system prompt for a first one), the new message, and
   * the reply it may write (`max_tokens`, else RESERVED_OUTPUT_TOKENS).
   */
  function estimateTurnTokens(live: LiveFighter, text: string, model: ModelSettings): number {
    const context = live.contextTokens ?? estimateTokens(live.row.manifest.system_prompt);
    return context + estimateTokens(text) + (model.max_tokens ?? RESERVED_OUTPUT_TOKENS);
  }

  async function messageTo(
    fromIdOrName: string,
    toIdOrName: string,
    content: string,
  ): Promise<FighterMessageResult> {
    const from = fighters.find(fromIdOrName);
    const to = fighters.find(toIdOrName);
    if (from === to) throw new SparError("VALIDATION_FAILED", "a fighter cannot message itself");
    const result = await message(
      to.row.id,
      `[message from fighter "${from.row.name}" (${from.row.id})]\n${content}`,
    );
    aftercare.recordExchange(from.row, to.row, content);
    return result;
  }

  return { message, messageTo, llm, aftercare, stop: () => quotas.stop() };
}
