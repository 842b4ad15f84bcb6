import { SparError } from "../sdk/errors.js";

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
