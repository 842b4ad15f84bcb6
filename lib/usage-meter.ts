/**
 * The usage ledger's writer: every model call a turn makes is recorded as it returns, with the
 * fighter, bout, turn and origin it was made for, the tokens its provider reported (cached and
 * cache-write included) and its cost (lib/pricing.ts; null for an unpriced model). Recorded per call,
 * not per turn, so a turn that fails or is cut short by a crash after a call still has that call's
 * spend on the books. A ledger write that fails is logged: the reply the call paid for still stands.
 */
import type { Logger } from "../sdk/index.js";
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

/** Wraps a driver so each call it answers is recorded in the usage ledger for `call`. */
export type UsageMeter = (driver: LlmDriver, settings: ModelSettings, call: MeteredCall) => LlmDriver;

export function createUsageMeter(deps: UsageMeterDeps): UsageMeter {
  const now = deps.now ?? (() => new Date());
  return (driver, settings, call) => {
    const price = deps.prices.price(settings);
    return {
      provider: driver.provider,
      probe: (signal) => driver.probe(signal),
      async complete(request) {
        const reply = await driver.complete(request);
        const { usage } = reply;
        try {
          await deps.store().usage.record({
            ...call,
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
        } catch (err) {
          deps.log.warn("usage ledger write failed", { turn: call.turn_id, error: String(err) });
        }
        return reply;
      },
    };
  };
}
