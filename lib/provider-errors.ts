import { isSparError, SparError } from "../sdk/errors.js";

/**
 * How provider plugins report a failed call, so the kernel's one retry policy can decide: every
 * driver throws `providerError(...)` and never retries by itself.
 *
 * @example
 * throw providerError("anthropic", err.message, { status: 429, retryAfterS: 7 });
 */
export function providerError(
  provider: string,
  message: string,
  details: { status?: number; retryAfterS?: number; retryable?: boolean; cause?: unknown } = {},
): SparError {
  const retryable = details.retryable ?? isRetryableStatus(details.status);
  return new SparError(
    "PROVIDER_ERROR",
    `${provider}: ${message}`,
    {
      provider,
      retryable,
      ...(details.status !== undefined ? { provider_status: details.status } : {}),
      ...(details.retryAfterS !== undefined ? { retry_after_s: details.retryAfterS } : {}),
    },
    { cause: details.cause },
  );
}

/**
 * Worth another try: no HTTP status (the connection failed), 408 timeout, 409 conflict, 429 rate
 * limit, or a 5xx. Anything else (400, 401, 403, 404 …) would fail the same way again.
 */
export function isRetryableStatus(status: number | undefined): boolean {
  if (status === undefined) return true;
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/** Parses a `retry-after` header (seconds or an HTTP date) into seconds from `now`. */
export function parseRetryAfter(value: string | null | undefined, now = Date.now()): number | undefined {
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, (at - now) / 1000);
}

/**
 * The vectors of an embedding reply, checked: one per input, every number finite, all of one length
 * (the `dimensions` asked for, when asked). A reply that is not is the server's fault and would be
 * the same again: PROVIDER_ERROR, not retryable. Every driver's `embed` returns through this.
 *
 * @example
 * return { vectors: checkEmbeddings("ollama", request, reply.embeddings) };
 */
export function checkEmbeddings(
  provider: string,
  request: { input: readonly string[]; dimensions?: number },
  vectors: readonly (ArrayLike<number> | undefined)[] | undefined,
): number[][] {
  const refuse = (problem: string) =>
    providerError(provider, `the embedding reply ${problem}`, { retryable: false });
  if (!Array.isArray(vectors) || vectors.length !== request.input.length) {
    throw refuse(
      `held ${Array.isArray(vectors) ? vectors.length : "no"} vectors for ${request.input.length} inputs`,
    );
  }
  const length = request.dimensions ?? vectors[0]?.length ?? 0;
  // Array.from, not map: a reply's vectors placed by their `index` may leave a hole, which map skips.
  return Array.from(vectors, (vector: ArrayLike<number> | undefined, i): number[] => {
    if (!vector?.length) throw refuse(`had no vector at ${i}`);
    if (vector.length !== length)
      throw refuse(`had a vector of ${vector.length} numbers at ${i}, not ${length}`);
    const out: number[] = Array.from(vector);
    if (!out.every(Number.isFinite)) throw refuse(`had a number that is not finite in vector ${i}`);
    return out;
  });
}

/**
 * How long to wait before retry `attempt` (0-based): a 429's `retry_after_s` when the provider gave
 * one, else exponential backoff from `baseMs`, with jitter, capped at 8 s.
 */
export function retryDelay(error: SparError, attempt: number, baseMs: number): number {
  const retryAfter = error.extra.retry_after_s;
  if (typeof retryAfter === "number") return retryAfter * 1000;
  const backoff = Math.min(8000, baseMs * 2 ** attempt);
  return backoff / 2 + Math.random() * (backoff / 2);
}

/** What a driver threw, as PROVIDER_ERROR (not retryable) unless it already is a SparError. */
export function asProviderError(provider: string, err: unknown): SparError {
  if (isSparError(err)) return err;
  return new SparError(
    "PROVIDER_ERROR",
    `${provider}: ${err instanceof Error ? err.message : String(err)}`,
    { provider, retryable: false },
    { cause: err },
  );
}

/** PROVIDER_TIMEOUT: the call's deadline passed, retries and waits included. */
export function providerTimeout(provider: string, timeoutMs: number, cause: unknown): SparError {
  return new SparError(
    "PROVIDER_TIMEOUT",
    `${provider}: no complete reply within ${timeoutMs / 1000} s`,
    { provider },
    { cause },
  );
}
