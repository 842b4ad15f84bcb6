import { createIdempotency, requestHash } from "../../lib/idempotency.js";
import { observeTurns } from "../../lib/observe-points.js";
import type { CredentialCheck } from "../../lib/provider-keys.js";
import type { UsageMeter } from "../../lib/usage-meter.js";
import { cancellation, childController, shutdownCancellation } from "../../sdk/cancel.js";
import type { SparConfig } from "../../sdk/config.js";
import { SparError } from "../../sdk/errors.js";
import type { Bus, EventBus, TurnLease } from "../../sdk/events.js";
import type { RingHooks } from "../../sdk/hooks.js";
import type { Logger } from "../../sdk/index.js";
import type { FighterMessageResult, MessageOptions, MoveListing } from "../../sdk/services.js";
import type { Store, TurnRecord } from "../../sdk/store-types.js";
import type { ModelSettings } from "../../sdk/types.js";
import type { FighterRegistry, LiveFighter } from "../fighters/fighter-registry.js";
import type { PluginHost } from "../host/plugin-host.js";
import { driverResolver, llmService } from "../provider-call.js";
import { createAdmission } from "./admission.js";
import { createAftercare } from "./aftercare.js";
import type { TurnProgress } from "./agent-loop.js";
import { createApprovalWait } from "./approval-wait.js";
import { createHistoryCache } from "./history-cache.js";
import { createQuotaGuard } from "./quota-guard.js";
import { createTurnLeases } from "./turn-leases.js";
import { createTurnRunner } from "./turn-runner.js";

export interface MessagePathDeps {
  config: SparConfig;
  home: string;
  hooks: RingHooks;
  events: EventBus;
  host: PluginHost;
  log: Logger;
  store: () => Store;
  /** The bus, once it is open: quota windows and turn leases. */
  bus: () => Bus;
  fighters: FighterRegistry;
  declaredMoves: ReadonlyMap<string, MoveListing>;
  credentialFor: (settings: ModelSettings) => CredentialCheck;
  /** The model's context window (its setting, else its provider's manifest). */
  contextWindow: (model: ModelSettings) => number;
  /** Prices each model call (a turn's, or `llm`'s given whose it is) in the usage ledger. */
  meter: UsageMeter;
  /** The fighter's prompt cache key for a provider, unless its cache is off (lib/prompt-cache.ts). */
  cacheKeyFor: (fighterId: string, provider: string) => string | undefined;
}

/** A turn that has begun: what cancelling the fighter's turn aborts. */
interface ActiveTurn {
  controller: AbortController;
  turn_id?: string;
  bout_id?: string;
}

/**
 * The message data path (DESIGN §4): quota at the door, one turn per fighter at a time in arrival
 * order, the turn run and recorded step by step, then the completion event once the fighter is idle
 * and its usage recorded. Around it: Idempotency-Key, cancellation (one AbortSignal per turn) and
 * call chains, so a fighter never waits on a call back into itself. The reflection and compaction
 * that follow a turn run in the same queue, after the reply, before the next turn.
 */
export function createMessagePath(deps: MessagePathDeps) {
  const { config, hooks, events, host, fighters } = deps;

  const resolveDriver = driverResolver(deps.credentialFor, host, hooks);
  /** Aborted at shutdown: reflection and summary calls end with the daemon, not after it. */
  const shutdown = new AbortController();

  const llm = llmService({
    resolveDriver,
    meter: deps.meter,
    shutdown: shutdown.signal,
    embedBatch: config.memory.embeddings?.batch_size,
  });

  // About 2 MB of text: enough for the bouts of the fighters in use, never a store's worth.
  const histories = createHistoryCache(500_000);
  const aftercare = createAftercare({
    histories,
    store: deps.store,
    events,
    hooks,
    config,
    log: deps.log,
    activate: (event) => host.activate(event),
    contextWindow: deps.contextWindow,
  });

  // The runner takes config, home, hooks, events, log, store, declaredMoves and meter as given here.
  const runner = createTurnRunner({
    ...deps,
    histories,
    driver: resolveDriver,
    move: async (name) => {
      await host.activate(`onMove:${name}`);
      return hooks.move.resolve.promise(name);
    },
  });
  const quotas = createQuotaGuard({ config, events, fighters, windows: () => deps.bus().quotas });
  const { refuseCycles, refuseOversized, refuseUncallable, estimateTurnTokens } = createAdmission({
    config,
    fighters,
    credentialFor: deps.credentialFor,
    contextWindow: deps.contextWindow,
  });
  const idempotency = createIdempotency(deps.store);
  const leases = createTurnLeases(deps.bus, deps.store);
  /** Every turn admitted and not yet ended, queued or running, so shutdown can cancel them all. */
  const turns = new Set<ActiveTurn>();
  /** The running turn of each fighter. */
  const running = new Map<string, ActiveTurn>();
  /** Every queued or running turn's work, a killed fighter's included, so shutdown waits for all. */
  const pending = new Set<Promise<unknown>>();

  async function message(
    idOrName: string,
    text: string,
    opts: MessageOptions = {},
  ): Promise<FighterMessageResult> {
    const live = await fighters.lookup(idOrName);
    refuseCycles(live, opts.chain ?? []);
    if (opts.bout_id && opts.bout === "new") {
      throw new SparError("VALIDATION_FAILED", 'give bout_id or "bout": "new", not both');
    }
    const key = opts.idempotency_key;
    if (!key) return send(live, text, opts);
    const hash = requestHash(live.row.id, text, opts.bout ?? opts.bout_id);
    return idempotency.run(key, hash, (recorded) =>
      send(live, text, opts, { key, request_hash: hash, recorded }),
    );
  }

  const send = observeTurns(admitAndRun);
  async function admitAndRun(
    live: LiveFighter,
    text: string,
    opts: MessageOptions,
    keyed?: {
      key: string;
      request_hash: string;
      /** The first attempt's reply when the key was used before (see idempotency.ts). */
      recorded(): Promise<FighterMessageResult | undefined>;
    },
    resume?: TurnRecord,
  ): Promise<FighterMessageResult> {
    // Routing (a `provider.route` tap) may pick another model for a fighter that names none; the
    // quota holds the unrouted model's estimate until the turn's real usage replaces it.
    const named = live.row.manifest.model ?? config.default_model;
    refuseUncallable(named);
    refuseOversized(live, text, named);
    const reservation = await quotas.admit(live, estimateTurnTokens(live, text, named));
    // The daemon began stopping while the bus admitted it: the turn never starts.
    if (shutdown.signal.aborted) {
      await deps.bus().quotas.settle(reservation, 0);
      throw shutdown.signal.reason;
    }
    const { controller, unlink } = childController(opts.signal);
    const active: ActiveTurn = { controller };
    turns.add(active);
    const usage = { input_tokens: 0, output_tokens: 0 };
    const progress: TurnProgress = { usage, iterations: 0, model: "", tool_calls: [] };
    // The fighter is idle again the moment its turn is cancelled, whatever is still winding down.
    const idleOnCancel = () => quotas.settleStatus(live);
    let lease: TurnLease | undefined;
    const warnOf = (what: string) => (err: unknown) =>
      deps.log.warn(what, { fighter: live.row.name, fighter_id: live.row.id, error: String(err) });
    const work = live.queue.then(async () => {
      try {
        // A caller who gave up while this waited in the queue: the turn never starts.
        if (controller.signal.aborted) throw controller.signal.reason;
        if (!fighters.isLive(live))
          throw new SparError("FIGHTER_NOT_FOUND", `fighter "${live.row.name}" was killed`);
        // From here a kill or a shutdown aborts this turn, however far its set-up has got.
        running.set(live.row.id, active);
        lease = await leases.take(live.row.id, controller);
        // Its key's turn ran before: the stored reply, and no second turn (its request still counted).
        const replayed = await keyed?.recorded();
        if (replayed) return { result: replayed, completed: undefined };
        const model = live.row.manifest.model
          ? named
          : await hooks.provider.route.promise(named, { fighter: live.row, text });
        refuseUncallable(model);
        await quotas.start(live, reservation);
        controller.signal.throwIfAborted();
        fighters.setStatus(live, "fighting");
        controller.signal.addEventListener("abort", idleOnCancel, { once: true });
        return await runner.run(
          {
            live,
            text,
            model,
            options: opts,
            signal: controller.signal,
            ...(keyed ? { idempotency: { key: keyed.key, request_hash: keyed.request_hash } } : {}),
            ...(resume ? { resume } : {}),
            started: (ids) => {
              Object.assign(active, ids);
              opts.started?.(ids);
            },
          },
          progress,
        );
      } finally {
        await lease?.release().catch(warnOf("turn lease release failed"));
        controller.signal.removeEventListener("abort", idleOnCancel);
        if (running.get(live.row.id) === active) running.delete(live.row.id);
        turns.delete(active);
        unlink();
        // The reply stands whatever happens to the bookkeeping (a cluster bus that went away).
        await quotas
          .settle(live, reservation, progress.usage.input_tokens + progress.usage.output_tokens)
          .catch(warnOf("quota settle failed"));
      }
    });
    pending.add(work);
    live.queue = work.then(
      ({ completed }) => (completed && opts.aftercare !== false ? aftercare.later(completed) : undefined),
      () => undefined,
    );
    const done = work.finally(() => pending.delete(work));
    const { result, completed } = await done;
    if (!completed) return result;
    // After the fighter is idle and its usage recorded (DESIGN §4 step 6).
    events.publish({
      kind: "message.completed",
      fighter_id: live.row.id,
      bout_id: result.bout_id,
      turn_id: result.turn_id,
      usage: result.usage,
      iterations: result.iterations,
      model: result.model,
      stop_reason: result.stop_reason,
    });
    return result;
  }

  async function messageTo(
    fromIdOrName: string,
    toIdOrName: string,
    content: string,
    opts: Pick<MessageOptions, "signal" | "chain" | "taint"> = {},
  ): Promise<FighterMessageResult> {
    const from = await fighters.lookup(fromIdOrName);
    const to = await fighters.lookup(toIdOrName);
    if (from === to) throw new SparError("VALIDATION_FAILED", "a fighter cannot message itself");
    return message(to.row.id, `[message from fighter "${from.row.name}" (${from.row.id})]\n${content}`, {
      signal: opts.signal,
      // The sender waits on the reply, so it is in the chain even when it is not in a turn itself.
      chain: opts.chain ?? [from.row.id],
      sender: { kind: "fighter", name: from.row.name, content },
      taint: opts.taint,
    });
  }

  async function cancel(idOrName: string): Promise<{ turn_id: string; bout_id: string }> {
    const live = await fighters.lookup(idOrName);
    const active = running.get(live.row.id);
    if (!active?.turn_id || !active.bout_id || active.controller.signal.aborted) {
      throw new SparError("CONFLICT", `fighter "${live.row.name}" has no turn running`);
    }
    active.controller.abort(cancellation("POST /api/v1/fighters/:id/cancel"));
    return { turn_id: active.turn_id, bout_id: active.bout_id };
  }

  /** A fighter was killed: its running turn is cancelled (its queued ones never start). */
  function killed(fighterId: string): void {
    running.get(fighterId)?.controller.abort(cancellation("its fighter was killed"));
  }

  /** Shutdown: every queued and running turn is cancelled and recorded before the store closes. */
  async function stop(): Promise<void> {
    const stopping = shutdownCancellation();
    shutdown.abort(stopping);
    for (const active of turns) active.controller.abort(stopping);
    await Promise.allSettled([...pending, ...fighters.all().map((f) => f.queue)]);
    quotas.stop();
  }

  return {
    message,
    messageTo,
    /** Takes up a turn left `awaiting_approval` in its fighter's queue: CONFLICT when it no longer waits. */
    resume: async (turn: TurnRecord) => send(await fighters.lookup(turn.fighter_id), "", {}, undefined, turn),
    awaitApproval: createApprovalWait({ running, fighters, store: deps.store }),
    cancel,
    killed,
    stop,
    llm,
    purgeIdempotency: idempotency.purge,
  };
}

export type MessagePath = ReturnType<typeof createMessagePath>;
