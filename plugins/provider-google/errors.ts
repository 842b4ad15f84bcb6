/**
 * How the Gemini SDK's failures become `providerError(...)`: the HTTP status and the wait the API asks
 * for, the provider's own message, and never the key.
 */
import { join } from "node:path";
import { ApiError } from "@google/genai";
import type { SparError } from "../../sdk/index.js";
import { isSparError, providerError } from "../../sdk/index.js";

export const PROVIDER = "google";

/** A reply the SDK accepted but the driver cannot use; its message is already fit for people. */
export class IncompleteReply extends Error {
  constructor(
    message: string,
    readonly retryable = true,
  ) {
    super(message);
  }
}

export function missingKey(keyEnvs: string[], home: string | undefined): SparError {
  const file = home ? join(home, ".env") : "<data dir>/.env";
  return providerError(PROVIDER, `no API key: set ${keyEnvs.join(" or ")} in the environment or in ${file}`, {
    retryable: false,
  });
}

export function toSparError(err: unknown, apiKey: string, signal: AbortSignal | undefined): SparError {
  if (isSparError(err)) return err;
  // Belt and braces: the SDK sends the key in a header, never in a URL or a message, but a message
  // must never carry it to a log.
  const clean = (text: string) => text.split(apiKey).join("***");
  if (err instanceof IncompleteReply) {
    return providerError(PROVIDER, clean(err.message), { retryable: err.retryable, cause: err });
  }
  if (err instanceof ApiError) {
    const body = errorBody(err.message);
    return providerError(PROVIDER, clean(`${err.status} ${body.text}`), {
      status: err.status,
      retryAfterS: body.retryAfterS,
      cause: err,
    });
  }
  if (signal?.aborted || (err instanceof Error && err.name === "AbortError")) {
    return providerError(PROVIDER, "the request was aborted", { cause: err });
  }
  return providerError(PROVIDER, clean(describe(err)), { cause: err });
}

/**
 * What the failure was, with its root cause. undici fails `fetch failed` before a response and
 * `terminated` when the body breaks off; a SyntaxError is a body that is not JSON.
 */
function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  let root: unknown = err.cause;
  while (root instanceof Error && root.cause instanceof Error) root = root.cause;
  const detail = root instanceof Error ? `${err.message} (${root.message})` : err.message;
  if (err instanceof SyntaxError) return `the reply was not valid JSON: ${detail}`;
  if (!(err instanceof TypeError)) return detail;
  return err.message === "fetch failed"
    ? `connection error: ${detail}`
    : `the connection broke mid-reply: ${detail}`;
}

interface GoogleErrorBody {
  error?: { message?: unknown; status?: unknown; details?: unknown };
}

/**
 * The SDK's ApiError carries the whole error body as its message (after "got status: …. " when the
 * error came inside a stream) and drops the response headers, so a `retry-after` header cannot be
 * read. The Gemini API says how long to wait in the body instead, as a google.rpc.RetryInfo detail.
 */
function errorBody(message: string): { text: string; retryAfterS?: number } {
  const start = message.indexOf("{");
  let parsed: GoogleErrorBody | undefined;
  try {
    parsed = start >= 0 ? (JSON.parse(message.slice(start)) as GoogleErrorBody) : undefined;
  } catch {
    parsed = undefined;
  }
  const error = parsed?.error;
  if (typeof error?.message !== "string") return { text: message };
  const text = typeof error.status === "string" ? `${error.status}: ${error.message}` : error.message;
  const retryAfterS = retryDelay(error.details);
  return retryAfterS === undefined ? { text } : { text, retryAfterS };
}

function retryDelay(details: unknown): number | undefined {
  if (!Array.isArray(details)) return undefined;
  for (const detail of details as unknown[]) {
    if (typeof detail !== "object" || detail === null) continue;
    const { "@type": type, retryDelay: delay } = detail as Record<string, unknown>;
    if (type !== "type.googleapis.com/google.rpc.RetryInfo" || typeof delay !== "string") continue;
    // A protobuf Duration in JSON: seconds with an "s", e.g. "37s" or "0.5s".
    const match = /^(\d+(?:\.\d+)?)s$/.exec(delay);
    if (match?.[1]) return Number(match[1]);
  }
  return undefined;
}
