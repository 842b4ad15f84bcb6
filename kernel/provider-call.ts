import { providerError } from "../lib/provider-errors.js";
import type { CredentialCheck } from "../lib/provider-keys.js";
import { anySignal } from "../lib/signals.js";
import { cancelledError } from "../sdk/cancel.js";
import { isSparError, SparError } from "../sdk/errors.js";
import type { RingHooks } from "../sdk/hooks.js";
import type { LlmDriver, LlmRequest, LlmResponse, ModelSettings } from "../sdk/types.js";
import type { PluginHost } from "./host/plugin-host.js";

export interface CallPolicy {
  /** The whole call, retries and waits included, ends within this. */
  timeoutMs: number;
  /** Further attempts after the first, for retryable failures only. */
  maxRetries: number;
  /** First backoff step; doubles per attempt, with jitter, capped at 8 s. */
  baseDelayMs?: number;
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

export const DEFAULT_TIMEOUT_S = 120;
export const DEFAULT_MAX_RETRIES = 2;

/** The policy a model setting asks for: `timeout_s` and `max_retries`, or the defaults. */
export function policyFor(model: ModelSettings): CallPolicy {
  return {
    timeoutMs: (model.timeout_s ?? DEFAULT_TIMEOUT_S) * 1000,
    maxRetries: model.max_retries ?? DEFAULT_MAX_RETRIES,
  };
}

/**
 * Calls a provider under the one policy every provider shares: the caller's `request.signal`
 * (CANCELLED when it fires, no retry after it), a deadline for the whole call
 * (PROVIDER_TIMEOUT when it passes), bounded retries with exponential backoff for failures the driver
 * marks retryable, a 429's `retry_after_s` honoured when it fits before the deadline, and no retry
 * once text has been streamed to the caller (a second attempt would repeat it).
 */
export async function callProvider(
  driver: LlmDriver,
  request: LlmRequest,
  policy: CallPolicy,
): Promise<LlmResponse> {
  const deadline = Date.now() + policy.timeoutMs;
  const sleep = policy.sleep ?? abortableSleep;
  const overall = new AbortController();
  const timer = setTimeout(() => overall.abort(), policy.timeoutMs);
  // The caller's cancellation joins the deadline; it never replaces it.
  const caller = request.signal;
  const { signal, unlink } = caller
    ? anySignal([caller, overall.signal])
    : { signal: overall.signal, unlink() {} };
  let streamed = false;
  const onDelta = request.onDelta
    ? (text: string) => {
        streamed = true;
        request.onDelta?.(text);
      }
    : undefined;
  try {
    for (let attempt = 0; ; attempt++) {
      if (caller?.aborted) throw cancelledError(caller);
      try {
        return await driver.complete({ ...request, onDelta, signal });
      } catch (err) {
        if (caller?.aborted) throw cancelledError(caller);
        if (overall.signal.aborted) throw timeoutError(driver.provider, policy.timeoutMs, err);
        const error = asProviderError(driver.provider, err);
        if (streamed || attempt >= policy.maxRetries || error.extra.retryable !== true) throw error;
        const waitMs = retryDelay(error, attempt, policy.baseDelayMs ?? 500);
        if (Date.now() + waitMs >= deadline) throw error;
        await sleep(waitMs, signal);
        if (caller?.aborted) throw cancelledError(caller);
        if (overall.signal.aborted) throw timeoutError(driver.provider, policy.timeoutMs, err);
      }
    }
  } finally {
    clearTimeout(timer);
    unlink();
  }
}

function retryDelay(error: SparError, attempt: number, baseMs: number): number {
  const retryAfter = error.extra.retry_after_s;
  if (typeof retryAfter === "number") return retryAfter * 1000;
  const backoff = Math.min(8000, baseMs * 2 ** attempt);
  return backoff / 2 + Math.random() * (backoff / 2);
}

function asProviderError(provider: string, err: unknown): SparError {
  if (isSparError(err)) return err;
  return new SparError(
    "PROVIDER_ERROR",
    `${provider}: ${err instanceof Error ? err.message : String(err)}`,
    { provider, retryable: false },
    { cause: err },
  );
}

function timeoutError(provider: string, timeoutMs: number, cause: unknown): SparError {
  return new SparError(
    "PROVIDER_TIMEOUT",
    `${provider}: no complete reply within ${timeoutMs / 1000} s`,
    { provider },
    { cause },
  );
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((done) => {
    const timer = setTimeout(finish, ms);
    function finish() {
      clearTimeout(timer);
      signal.removeEventListener("abort", finish);
      done();
    }
    signal.addEventListener("abort", finish);
  });
}

/**
 * The driver for a model setting: the key the operator's pairings allow for it (PROVIDER_ERROR,
 * not retryable, when there is none), the provider's plugin activated on first use, and its answer
 * to `provider.resolve`.
 */
export function driverResolver(
  credentialFor: (settings: ModelSettings) => CredentialCheck,
  host: PluginHost,
  hooks: RingHooks,
) {
  return async (settings: ModelSettings): Promise<LlmDriver> => {
    const check = credentialFor(settings);
    if (!check.ok)
      throw new SparError("PROVIDER_ERROR", check.problem, { provider: settings.provider, retryable: false });
    await host.activate(`onProvider:${settings.provider}`);
    const driver = await hooks.provider.resolve.promise(settings, check.credential);
    if (!driver)
      throw providerError(settings.provider, "no active plugin answered for this provider", {
        retryable: false,
      });
    return driver;
  };
}
