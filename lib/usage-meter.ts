/**
 * The usage ledger's writer: every model call a turn makes is recorded, with the fighter, bout, turn
 * and origin it was made for, the tokens its provider reported (cached and cache-write included) and
 * its cost (lib/pricing.ts; null for an unpriced model). Recorded per call, not per turn, and written
 * with the turn's next write (the step that stores the call's reply, or the turn's end, a failed
 * one's too), so a turn that fails after a call still has that call's spend on the books. A ledger
 * write that fails is logged: the reply the call paid for still stands.
 */
import type { RingHooks, SpendContext, SpendFigures, SpendHold } from "../sdk/hooks.js";
import type { Logger } from "../sdk/index.js";
import { observing } from "../sdk/observe.js";
import type { ApprovalNotice } from "../sdk/services.js";
import type { UsageRecord } from "../sdk/store-rows.js";
import type { Store } from "../sdk/store-types.js";
import { promptTokens } from "../sdk/tokens.js";
import type { FighterRow, LlmDriver, LlmRequest, ModelSettings } from "../sdk/types.js";
import { observeModelCall } from "./observe-points.js";
import { costMicros, type Price, type PriceBook } from "./pricing.js";

/** The reply a call's worst case counts when its model sets no `max_tokens`. */
export const WORST_OUTPUT_TOKENS = 4096;

/** Whose call it is. */
export interface MeteredCall {
  fighter_id: string;
  bout_id: string;
  turn_id: string;
  /** The bout's origin (`user` for a user's own). */
  origin: string;
}

/** The turn's fighter and its caller's approval listener: what budgets see of a call (the `spend` hooks). */
export interface MeteredTurn {
  fighter: FighterRow;
  onApproval?: (approval: ApprovalNotice) => void;
  /** No one waits on the call (a reflection, a summary): a budget's `on_exceed = "ask"` stops it instead. */
  unattended?: boolean;
}

export interface UsageMeterDeps {
  prices: PriceBook;
  /** The `spend` hooks: budgets reserved before each call and settled after (README "Budgets"). */
  hooks?: Pick<RingHooks, "spend">;
  store: () => Store;
  log: Logger;
  now?: () => Date;
}

/**
 * A turn's ledger: `wrap` makes a driver whose calls are priced and kept; `flush` writes what is
 * kept, to be called just before the turn's next write (a step or its end) and awaited with it, so
 * the rows share that write's batched transaction (store-sqlite durability.ts) instead of costing a
 * commit of their own, and are durable when the turn is.
 */
export interface TurnLedger {
  wrap(driver: LlmDriver, settings: ModelSettings): LlmDriver;
  flush(): Promise<void>;
}

/** A ledger for the turn `call` names (read when a call is kept: a resumed turn's origin is its bout's). */
export type UsageMeter = (call: () => MeteredCall, turn?: MeteredTurn) => TurnLedger;

export function createUsageMeter(deps: UsageMeterDeps): UsageMeter {
  const now = deps.now ?? (() => new Date());
  const spend = deps.hooks?.spend;
  /**
   * The budgets a call must reserve against, and the hold when any applies: no tap, no budget, no
   * round trip. Throws BUDGET_EXCEEDED (or what the budgets plugin throws) before the call is sent.
   */
  async function reserve(
    context: SpendContext,
    settings: ModelSettings,
    price: Price | undefined,
    request: LlmRequest,
    turn: MeteredTurn | undefined,
  ): Promise<{ hold: SpendHold; worst: () => SpendFigures } | undefined> {
    if (!spend || spend.budgets.taps.length === 0) return undefined;
    const rules = await spend.budgets.promise([], context);
    if (rules.length === 0) return undefined;
    let figures: SpendFigures | undefined;
    const worst = () => (figures ??= worstCase(price, settings, request));
    const signal = request.signal ?? new AbortController().signal;
    const hold = await spend.reserve.promise({
      ...context,
      model: settings,
      worst,
      rules,
      signal,
      ask: async (question) =>
        turn?.unattended
          ? undefined
          : spend.ask.promise({ ...context, ...question, signal, onApproval: turn?.onApproval }),
    });
    return hold ? { hold, worst } : undefined;
  }

  return (call, turn) => {
    let kept: UsageRecord[] = [];
    // Turn-related lines name the fighter, so `spar logs --fighter` finds them.
    const who = () => ({ fighter: turn?.fighter.name, fighter_id: call().fighter_id, turn: call().turn_id });
    const failed = (err: unknown) =>
      deps.log.warn("usage ledger write failed", { ...who(), error: String(err) });
    // The reply the call paid for stands whatever happens to the budget's bookkeeping.
    const warnOf = (message: string) => (err: unknown) =>
      deps.log.warn(message, { ...who(), error: String(err) });
    return {
      wrap(driver, settings) {
        const price = deps.prices.price(settings);
        return {
          provider: driver.provider,
          probe: (signal) => driver.probe(signal),
          async complete(request) {
            const ids = call();
            const held =
              turn &&
              (await reserve(
                { fighter: turn.fighter, bout_id: ids.bout_id, turn_id: ids.turn_id, origin: ids.origin },
                settings,
                price,
                request,
                turn,
              ));
            let reply: Awaited<ReturnType<LlmDriver["complete"]>>;
            try {
              // One observed model call per attempt (lib/observe-points.ts), free while none observes.
              reply = await (observing()
                ? observeModelCall(settings, request, price, () => driver.complete(request))
                : driver.complete(request));
            } catch (err) {
              await held?.hold.release().catch(warnOf("budget release failed"));
              throw err;
            }
            const { usage } = reply;
            const cost = price ? costMicros(price, usage) : null;
            kept.push({
              ...ids,
              provider: settings.provider,
              model: settings.model,
              at: now().toISOString(),
              input_tokens: usage.input_tokens,
              output_tokens: usage.output_tokens,
              cached_tokens: usage.cached_tokens ?? 0,
              cache_write_tokens: usage.cache_write_tokens ?? 0,
              cost_micros: cost,
              currency: price ? price.currency : null,
            });
            if (held) {
              // A provider that reports no usage is charged the call's worst case (and flagged there).
              const tokens = usage.input_tokens + usage.output_tokens;
              const reported = tokens > 0;
              await held.hold
                .settle(reported ? { tokens, cost_micros: cost } : held.worst(), reported)
                .catch(warnOf("budget settle failed"));
            }
            return reply;
          },
        };
      },
      // A failed ledger write is logged: the reply the call paid for still stands.
      async flush() {
        const rows = kept;
        kept = [];
        await Promise.all(
          rows.map((row) => {
            try {
              return deps.store().usage.record(row).catch(failed);
            } catch (err) {
              return failed(err);
            }
          }),
        );
      },
    };
  };
}

/**
 * The driver for one model call made after a turn for its fighter (`ring.llm.complete` with whose
 * call it is: a reflection, a bout's summary): priced in the ledger like the turn's own calls, its
 * row written on its own once the call ends (off the reply's path), and reserved against the same
 * budgets, which stop it rather than ask.
 *
 * @example
 * const reply = await meteredCall(meter, call, driver, model, (metered) => callProvider(metered, request));
 */
export async function meteredCall<T>(
  meter: UsageMeter,
  call: SpendContext,
  driver: LlmDriver,
  model: ModelSettings,
  send: (metered: LlmDriver) => Promise<T>,
): Promise<T> {
  const { fighter, bout_id, turn_id, origin } = call;
  const ledger = meter(() => ({ fighter_id: fighter.id, bout_id, turn_id, origin }), {
    fighter,
    unattended: true,
  });
  try {
    return await send(ledger.wrap(driver, model));
  } finally {
    await ledger.flush();
  }
}

/**
 * A call's worst case: the prompt as estimated (sdk/tokens.ts) and the whole reply its `max_tokens`
 * allows (else WORST_OUTPUT_TOKENS), every input token at the full input price.
 */
export function worstCase(
  price: Price | undefined,
  settings: ModelSettings,
  request: Pick<LlmRequest, "system" | "context" | "messages" | "tools">,
): SpendFigures {
  const input = promptTokens({
    // The turn's context is sent too, after the history (sdk/turn-context.ts).
    system: request.context ? `${request.system}\n\n${request.context}` : request.system,
    messages: request.messages,
    tools: request.tools ?? [],
  });
  const output = settings.max_tokens ?? WORST_OUTPUT_TOKENS;
  return {
    tokens: input + output,
    cost_micros: price ? costMicros(price, { input_tokens: input, output_tokens: output }) : null,
  };
}
