import { type ErrorCode, type ErrorExtra, SparError } from "../../sdk/errors.js";

/**
 * The daemon's error answer (`{"error":{"code","message",…}}`) as a SparError with its code, message
 * and extra fields (`retry_after_s`, `path` …); a body of another shape is INTERNAL naming the status.
 *
 * @example
 * if (!response.ok) throw errorFromBody(response.status, await response.text());
 */
export function errorFromBody(status: number, text: string): SparError {
  let error: { code?: string; message?: string; [key: string]: unknown } | undefined;
  try {
    error = (JSON.parse(text) as { error?: typeof error }).error;
  } catch {
    // Not our error shape: report the status.
  }
  const { code, message, ...extra } = error ?? {};
  return new SparError(
    (code as ErrorCode | undefined) ?? "INTERNAL",
    message ?? `the daemon answered ${status}`,
    extra as ErrorExtra,
  );
}
