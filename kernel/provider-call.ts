import { embedInBatches } from "../lib/embed-batches.js";
import { asProviderError, providerError, providerTimeout, retryDelay } from "../lib/provider-errors.js";
import type { CredentialCheck } from "../lib/provider-keys.js";
import { abortableSleep, anySignal } from "../lib/signals.js";
import { meteredCall, type UsageMeter } from "../lib/usage-meter.js";
import { cancelledError } from "../sdk/cancel.js";
import { SparError } from "../sdk/errors.js";
import type { RingHooks } from "../sdk/hooks.js";
import type { RingServices } from "../sdk/services.js";
import type {
  EmbedRequest,
  EmbedResponse,
  LlmDriver,
  LlmRequest,
  LlmResponse,
  ModelSettings,
} from "../sdk/types.js";
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
/** An embedding call is short: a batch that takes longer has failed. */
export const EMBED_TIMEOUT_S = 30;

/** The policy a model setting asks for: `timeout_s` and `max_retries`, or the defaults. */
export function policyFor(model: ModelSettings, timeoutS = DEFAULT_TIMEOUT_S): CallPolicy {
  return {
    timeoutMs: (model.timeout_s ?? timeoutS) * 1000,
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
export function callProvider(
  driver: LlmDriver,
  request: LlmRequest,
  policy: CallPolicy,
): Promise<LlmResponse> {
  let streamed = false;
  const onDelta = request.onDelta
    ? (text: string) => {
        streamed = true;
        request.onDelta?.(text);
      }
    : undefined;
  const attempt = (signal: AbortSignal) => driver.complete({ ...request, onDelta, signal });
  return underPolicy(driver.provider, request.signal, policy, attempt, () => !streamed);
}

/** Embeds in batches (lib/embed-batches.ts), each one call under the policy of `callProvider`. */
export function callEmbed(
  driver: LlmDriver,
  request: EmbedRequest,
  policy: CallPolicy,
  batchSize?: number,
): Promise<EmbedResponse> {
  return embedInBatches(driver, request, batchSize, (embed, batch) =>
    underPolicy(driver.provider, request.signal, policy, (signal) => embed({ ...batch, signal })),
  );
}

/** The retry loop `callProvider` and `callEmbed` share; `mayRetry` false after a partial answer. */
async function underPolicy<T>(
  provider: string,
  caller: AbortSignal | undefined,
  policy: CallPolicy,
  attempt: (signal: AbortSignal) => Promise<T>,
  mayRetry: () => boolean = () => true,
): Promise<T> {
  const deadline = Date.now() + policy.timeoutMs;
  const sleep = policy.sleep ?? abortableSleep;
  const overall = new AbortController();
  const timer = setTimeout(() => overall.abort(), policy.timeoutMs);
  // The caller's cancellation joins the deadline; it never replaces it.
  const { signal, unlink } = caller
    ? anySignal([caller, overall.signal])
    : { signal: overall.signal, unlink() {} };
  try {
    for (let tries = 0; ; tries++) {
      if (caller?.aborted) throw cancelledError(caller);
      try {
        return await attempt(signal);
      } catch (err) {
        if (caller?.aborted) throw cancelledError(caller);
        if (overall.signal.aborted) throw providerTimeout(provider, policy.timeoutMs, err);
        const error = asProviderError(provider, err);
        if (!mayRetry() || tries >= policy.maxRetries || error.extra.retryable !== true) throw error;
        const waitMs = retryDelay(error, tries, policy.baseDelayMs ?? 500);
        if (Date.now() + waitMs >= deadline) throw error;
        await sleep(waitMs, signal);
        if (caller?.aborted) throw cancelledError(caller);
        if (overall.signal.aborted) throw providerTimeout(provider, policy.timeoutMs, err);
      }
    }
  } finally {
    clearTimeout(timer);
    unlink();
  }
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

/**
 * `ring.llm`: model calls for plugins' own uses (reflection, summaries, embeddings), each ended by
 * `shutdown` as well as by its caller. A completion is metered given `call`.
 */
export function llmService(deps: {
  resolveDriver: (settings: ModelSettings) => Promise<LlmDriver>;
  meter: UsageMeter;
  shutdown: AbortSignal;
  /** `[memory.embeddings] batch_size`. */
  embedBatch?: number;
}): RingServices["llm"] {
  const joined = (signal?: AbortSignal) => anySignal([deps.shutdown, ...(signal ? [signal] : [])]);
  return {
    async complete(model, request, call) {
      const { signal, unlink } = joined(request.signal);
      const send = (driver: LlmDriver) =>
        callProvider(driver, { ...request, model, signal }, policyFor(model));
      try {
        const driver = await deps.resolveDriver(model);
        return await (call ? meteredCall(deps.meter, call, driver, model, send) : send(driver));
      } finally {
        unlink();
      }
    },
    async embed(settings, request) {
      const { signal, unlink } = joined(request.signal);
      try {
        if (request.input.length === 0) return { vectors: [] };
        const driver = await deps.resolveDriver(settings);
        const embedding = { ...request, model: settings.model, signal };
        return await callEmbed(driver, embedding, policyFor(settings, EMBED_TIMEOUT_S), deps.embedBatch);
      } finally {
        unlink();
      }
    },
  };
}
