/**
 * For tests only: what a call costs by the shipped price table (each provider plugin's plugin.json),
 * worked out independently of lib/pricing.ts so the end-to-end suites check it rather than repeat it.
 */

/** USD per million tokens: fresh input, output, cached input, cache writes. */
export interface Rates {
  input: number;
  output: number;
  cached: number;
  write: number;
}

/** The shipped prices of the models the suites script. */
export const GPT_4O_MINI: Rates = { input: 0.15, output: 0.6, cached: 0.075, write: 0.15 };
export const SONNET_4_5: Rates = { input: 3, output: 15, cached: 0.3, write: 3.75 };

/** Micro-dollars of a call: tokens × USD per million tokens, fresh input = input − cached − written. */
export function micros(
  rates: Rates,
  usage: {
    prompt_tokens: number;
    completion_tokens: number;
    cached_tokens?: number;
    cache_write_tokens?: number;
  },
): number {
  const cached = usage.cached_tokens ?? 0;
  const written = usage.cache_write_tokens ?? 0;
  return Math.round(
    (usage.prompt_tokens - cached - written) * rates.input +
      cached * rates.cached +
      written * rates.write +
      usage.completion_tokens * rates.output,
  );
}
