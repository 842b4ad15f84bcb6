/**
 * The usage ledger's writer: every model call a turn makes is recorded, with the fighter, bout, turn
 * and origin it was made for, the tokens its provider reported (cached and cache-write included) and
 * its cost (lib/pricing.ts; null for an unpriced model). Recorded per call, not per turn, and written
 * with the turn's next write (the step that stores the call's reply, or the turn's end, a failed
 * one's too), so a turn that fails after a call still has that call's spend on the books. A ledger
 * write that fails is logged: the reply the call paid for still stands.
 */
import type { Logger } from "../sdk/index.js";
import type { UsageRecord } from "../sdk/store-rows.js";
import type { Store } from "../sdk/store-types.js";
import type { LlmDriver, ModelSettings } from "../sdk/types.js";
import { costMicros, type PriceBook } from "./pricing.js";

/** Whose call it is. */
export interface MeteredCall {
  fighter_id: string;
  bout_id: string;
  turn_id: string;
  /** The bout's origin (`user` for a user's own). */
  origin: string;
}

export interface UsageMeterDeps {
  prices: PriceBook;
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
export type UsageMeter = (call: () => MeteredCall) => TurnLedger;

export function createUsageMeter(deps: UsageMeterDeps): UsageMeter {
  const now = deps.now ?? (() => new Date());
  return (call) => {
    let kept: UsageRecord[] = [];
    const failed = (err: unknown) =>
      deps.log.warn("usage ledger write failed", { turn: call().turn_id, error: String(err) });
    return {
      wrap(driver, settings) {
        const price = deps.prices.price(settings);
        return {
          provider: driver.provider,
          probe: (signal) => driver.probe(signal),
          async complete(request) {
            const reply = await driver.complete(request);
            const { usage } = reply;
            kept.push({
              ...call(),
              provider: settings.provider,
              model: settings.model,
              at: now().toISOString(),
              input_tokens: usage.input_tokens,
              output_tokens: usage.output_tokens,
              cached_tokens: usage.cached_tokens ?? 0,
              cache_write_tokens: usage.cache_write_tokens ?? 0,
              cost_micros: price ? costMicros(price, usage) : null,
              currency: price ? price.currency : null,
            });
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
