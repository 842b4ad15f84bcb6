import { USER_ORIGIN } from "../../lib/bout-origins.js";
import { originOf, resolveCallers } from "../../lib/fighter-chain.js";
import { workspaceOf } from "../../lib/fighter-files.js";
import { boutHistory, turnMoves } from "../../lib/turn-context.js";
import { resumedTurn } from "../../lib/turn-history.js";
import type { TurnLedger, UsageMeter } from "../../lib/usage-meter.js";
import { cancelledError, isShutdown } from "../../sdk/cancel.js";
import type { SparConfig } from "../../sdk/config.js";
import { isSparError, SparError } from "../../sdk/errors.js";
import type { EventBus } from "../../sdk/events.js";
import type { RingHooks, TurnSummary } from "../../sdk/hooks.js";
import type { Logger } from "../../sdk/index.js";
import type { FighterMessageResult, MessageOptions, MoveListing } from "../../sdk/services.js";
import type { Store, TurnRecord } from "../../sdk/store-types.js";
import type { BoutRecord, ChatMessage, ModelSettings } from "../../sdk/types.js";
import type { LiveFighter } from "../fighters/fighter-registry.js";
import { runTurn, type TurnDeps, type TurnProgress } from "./agent-loop.js";
import type { HistoryCache } from "./history-cache.js";

/** How long a move that ignores a cancellation is waited for before the turn moves on without it. */
export const CANCEL_GRACE_MS = 2000;

export interface TurnRunnerDeps {
  config: SparConfig;
  /** The data dir: fighters' workspaces live under it. */
  home: string;
  hooks: RingHooks;
  events: EventBus;
  log: Logger;
  store: () => Store;
  declaredMoves: ReadonlyMap<string, MoveListing>;
  driver: TurnDeps["driver"];
  /** Records each model call of a turn in the usage ledger (lib/usage-meter.ts). */
  meter: UsageMeter;
  move: TurnDeps["move"];
  /** Histories of recent bouts, kept after each completed turn (history-cache.ts). */
  histories: HistoryCache;
  /** The fighter's prompt cache key for a provider, unless its cache is off (lib/prompt-cache.ts). */
  cacheKeyFor: (fighterId: string, provider: string) => string | undefined;
}

export interface TurnRequest {
  live: LiveFighter;
  text: string;
  model: ModelSettings;
  options: MessageOptions;
  signal: AbortSignal;
  idempotency?: { key: string; request_hash: string };
  /** A turn left `awaiting_approval`, taken up again (`text` and the bout options are its own then). */
  resume?: TurnRecord;
  /** Told the turn's id and bout as soon as it is recorded (so it can be cancelled by id). */
  started(turn: { turn_id: string; bout_id: string }): void;
}

/**
 * Runs one admitted turn against the store (DESIGN §4 steps 3–5): the turn and its user message are
 * recorded first, every step as it happens, and the end (completed, failed or cancelled, with its
 * error) in one durable commit that also stores the reply for its Idempotency-Key. After that commit
 * nothing turns the answer into an error: the Creed's bookkeeping and `turn.end` taps that fail are
 * logged and published (`turn.hook_failed`), and the reply stands.
 */
export function createTurnRunner(deps: TurnRunnerDeps) {
  const { config, hooks, events } = deps;

  async function run(
    request: TurnRequest,
    progress: TurnProgress,
  ): Promise<{ result: FighterMessageResult; completed: TurnSummary }> {
    const { live, text, model, options } = request;
    const db = deps.store();
    // The fighters waiting on this turn limit it (lib/fighter-chain.ts); it runs in a bout of its
    // starter's (or its entry point's), never a user's: "the latest bout" is the latest of its own origin.
    const callers = await resolveCallers(options.chain ?? [], (id) => db.fighters.get(id));
    let origin = originOf(options.chain ?? [], options.origin);
    const latest = async () => (await db.bouts.latest(live.row.id, origin))?.id;
    let user = { role: "user" as const, content: text };
    // A turn taken up again (issue 30): running once more, from its bout and its stored steps.
    const { turn, bout, bout_created } = request.resume
      ? {
          turn: await db.turns.resume(request.resume.id),
          bout_created: false,
          bout: await boutOf(request.resume),
        }
      : await db.turns.begin({
          fighter_id: live.row.id,
          bout_id: options.bout === "new" ? undefined : (options.bout_id ?? (await latest())),
          ...(origin ? { origin } : {}),
          user,
          ...(request.idempotency ? { idempotency: request.idempotency } : {}),
        });
    origin = bout.origin; // A bout named by id keeps its origin: a chat's turn never acts as the user's.
    const ids = { fighter_id: live.row.id, bout_id: bout.id, turn_id: turn.id };
    request.started({ turn_id: turn.id, bout_id: bout.id });
    if (bout_created) events.publish({ kind: "bout.started", fighter_id: live.row.id, bout_id: bout.id });
    if (!request.resume) events.publish({ kind: "message.received", ...ids });
    // Each model call's usage, written with the turn's next write (lib/usage-meter.ts).
    const ledger = deps.meter(() => ({ ...ids, origin: origin ?? USER_ORIGIN }), {
      fighter: live.row,
      onApproval: options.onApproval,
    });
    let output: Awaited<ReturnType<typeof runTurn>>;
    let history: ChatMessage[] = [];
    try {
      const resumed = request.resume && (await resumable(bout, turn));
      if (resumed) user = resumed.user;
      history = deps.histories.take(bout.id, bout.message_count) ?? (await boutHistory(db, bout.id, turn.id));
      const moves = await turnMoves(hooks, deps.declaredMoves, live.row);
      output = await runTurn(
        {
          fighter: live.row,
          bout_id: bout.id,
          turn_id: turn.id,
          origin: origin ?? USER_ORIGIN,
          taint: [...(request.resume?.taint ?? options.taint ?? [])],
          model,
          cacheKey: deps.cacheKeyFor(live.row.id, model.provider),
          history,
          user,
          offered: moves.offered,
          declared: moves.declared,
          maxIterations: live.row.manifest.max_iterations ?? config.agent.max_iterations,
          loopGuardRepeats: config.agent.loop_guard_repeats,
          toolTimeoutMs: config.agent.tool_timeout_s * 1000,
          maxToolResultChars: config.agent.max_tool_result_chars,
          cancelGraceMs: CANCEL_GRACE_MS,
          signal: request.signal,
          chain: [...(options.chain ?? []), live.row.id],
          callers,
          workspace: () => workspaceOf(deps.home, live.row.name),
          onDelta: options.onDelta,
          onApproval: options.onApproval,
          request_id: options.request_id,
          ...(resumed ? { resumed } : {}),
        },
        {
          hooks,
          events,
          driver: async (settings) => ledger.wrap(await deps.driver(settings), settings),
          move: deps.move,
          commit: async (steps) => {
            await Promise.all([ledger.flush(), db.turns.append(turn.id, steps)]);
          },
        },
        progress,
      );
    } catch (err) {
      deps.histories.drop(bout.id);
      throw await fail(turn.id, ids, err, request, progress, ledger);
    }

    const result: FighterMessageResult = { bout_id: bout.id, turn_id: turn.id, ...output.result };
    live.contextTokens = output.context_tokens;
    const finished = db.turns.finish(turn.id, {
      status: "completed",
      messages: output.final,
      usage: progress.usage,
      iterations: progress.iterations,
      model: progress.model,
      stop_reason: result.stop_reason,
      ...(request.idempotency || request.resume ? { reply: { ok: true, result } } : {}),
      ...(result.taint ? { taint: result.taint } : {}),
    });
    await Promise.all([ledger.flush(), finished]);
    const completed: TurnSummary = {
      fighter: live.row,
      bout_id: bout.id,
      turn_id: turn.id,
      origin: origin ?? USER_ORIGIN,
      new_bout: bout_created,
      model,
      new_messages: output.messages,
      usage: result.usage,
      iterations: result.iterations,
      context_tokens: output.context_tokens,
      first_seq: bout.message_count,
      ...(options.sender ? { sender: options.sender } : {}),
      ...(result.taint ? { taint: result.taint } : {}),
    };
    await afterCommit(completed, turn.id);
    // Durable before acknowledged: one flush covers the turn's steps, its end and what the taps wrote.
    await db.durable();
    // The user's message is counted in bout.message_count already; the rest of the turn is not.
    if (request.resume) deps.histories.drop(bout.id);
    else
      deps.histories.put(bout.id, bout.message_count + output.messages.length - 1, [
        ...history,
        ...output.messages,
      ]);
    return { result, completed };
  }

  async function boutOf(turn: TurnRecord): Promise<BoutRecord> {
    const bout = await deps.store().bouts.get(turn.bout_id);
    if (!bout) throw new SparError("BOUT_NOT_FOUND", `turn ${turn.id} has no bout ${turn.bout_id}`);
    return bout;
  }

  /**
   * A turn that waited for an approval, as it stood: a user's or a channel's only (a fighter or troop
   * that started one is gone, and with it the limits its grants put on the turn). */
  async function resumable(bout: BoutRecord, turn: TurnRecord) {
    const state = resumedTurn(await deps.store().messages.tail(bout.id), turn.id);
    if (state && !/^(fighter|troop)/.test(bout.origin ?? "")) return state;
    throw new SparError("INTERRUPTED", "the turn waited for an approval, and cannot be taken up again");
  }

  /** Records how the turn ended, and returns the error its caller gets. */
  async function fail(
    turnId: string,
    ids: { fighter_id: string; bout_id: string; turn_id: string },
    err: unknown,
    request: TurnRequest,
    progress: TurnProgress,
    ledger: TurnLedger,
  ): Promise<SparError> {
    const cancelled = request.signal.aborted;
    const error = cancelled
      ? cancelledError(request.signal)
      : isSparError(err)
        ? err
        : new SparError("INTERNAL", "internal error", {}, { cause: err });
    const who = { fighter: request.live.row.name, ...ids };
    if (!isSparError(err) && !cancelled) deps.log.error("turn failed", { ...who, error: String(err) });
    // Stopped while a call waited for an approval: it stays waiting, for the next start to take up.
    if (
      isShutdown(request.signal.reason) &&
      (await deps.store().turns.get(turnId))?.status === "awaiting_approval"
    )
      return error;
    const status = cancelled ? "cancelled" : "failed";
    await ledger.flush();
    await deps.store().turns.finish(turnId, {
      status,
      error: { code: error.code, message: error.message },
      messages: [],
      usage: progress.usage,
      iterations: progress.iterations,
      model: progress.model,
      ...(request.idempotency ? { reply: { ok: false, error: error.toJSON().error } } : {}),
    });
    await deps.store().durable();
    events.publish({
      kind: "message.failed",
      ...ids,
      status,
      error: { code: error.code, message: error.message },
    });
    return error;
  }

  /** `turn.end` taps (the Creed's counters): after the commit, so none can fail the reply. */
  async function afterCommit(summary: TurnSummary, turnId: string): Promise<void> {
    try {
      await hooks.turn.end.promise(summary);
    } catch (err) {
      const error = err instanceof Error ? err.message : String(err);
      const who = { fighter: summary.fighter.name, fighter_id: summary.fighter.id, turn: turnId };
      deps.log.error("after a committed turn", { hook: "turn.end", ...who, error });
      events.publish({
        kind: "turn.hook_failed",
        fighter_id: summary.fighter.id,
        bout_id: summary.bout_id,
        turn_id: turnId,
        hook: "turn.end",
        error,
      });
    }
  }

  return { run };
}
