/**
 * One call's connection to the runner, and what its failures mean.
 *
 * ollama-js takes no per-request signal: a non-streamed chat or a list cannot be cancelled at all, and
 * `Ollama#abort()` ends every stream of that client. So each call gets its own client (construction
 * only formats the host) whose `fetch` carries the call's signal. The same fetch keeps what the client
 * drops: an error response's `retry-after`, and whether a failure came from reaching the server or from
 * reading its reply.
 */

import { Ollama } from "ollama";
import type { SparError } from "../../sdk/index.js";
import { anySignal, isSparError, parseRetryAfter, providerError } from "../../sdk/index.js";

export const PROVIDER = "ollama";

/** ollama-js's wording (AbortableAsyncIterator) for a stream that closed cleanly without `done: true`. */
const NO_DONE = "Did not receive done or success response in stream.";

/** The request never got a response: nothing listens there, DNS failed, TLS failed… */
class Unreachable extends Error {}
/** The response started, then its body failed: the connection broke mid-reply. */
class BrokenReply extends Error {}
/** A reply the client accepted but the driver cannot use; its message is already fit for people. */
export class IncompleteReply extends Error {}

export interface Call {
  readonly client: Ollama;
  /** The `retry-after` of the error response, which the client's ResponseError does not keep. */
  retryAfter(): string | null;
  /** Frees the socket of a reply left unread (the bytes after `done`, an error body). Idempotent. */
  close(): void;
}

export function openCall(
  host: string,
  baseFetch: typeof fetch,
  headers: Record<string, string> | undefined,
  signal: AbortSignal | undefined,
): Call {
  const local = new AbortController();
  const signals = signal ? [local.signal, signal] : [local.signal];
  let retryAfter: string | null = null;
  const callFetch: typeof fetch = async (input, init) => {
    // Every source lives as long as this call, so nothing needs unlinking.
    const combined = anySignal(init?.signal ? [...signals, init.signal] : signals).signal;
    let response: Response;
    try {
      response = await baseFetch(input, { ...init, signal: combined });
    } catch (err) {
      throw combined.aborted ? err : new Unreachable("no response", { cause: err });
    }
    if (!response.ok) retryAfter = response.headers.get("retry-after");
    if (!response.body) return response;
    const { status, statusText } = response;
    return new Response(guardBody(response.body, combined), {
      status,
      statusText,
      headers: response.headers,
    });
  };
  let client: Ollama;
  try {
    client = new Ollama({ host, fetch: callFetch, ...(headers ? { headers } : {}) });
  } catch (err) {
    // The client parses the host with `new URL`; a typo in base_url would otherwise escape untyped.
    const detail = err instanceof Error ? err.message : String(err);
    throw providerError(PROVIDER, `base_url "${host}" is not a URL: ${detail}`, {
      retryable: false,
      cause: err,
    });
  }
  return {
    client,
    retryAfter: () => retryAfter,
    close: () => local.abort(),
  };
}

/** Passes the body through, marking a read failure that is not an abort as the connection's. */
function guardBody(body: ReadableStream<Uint8Array>, signal: AbortSignal): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) controller.close();
        else controller.enqueue(value);
      } catch (err) {
        controller.error(signal.aborted ? err : new BrokenReply("read failed", { cause: err }));
      }
    },
    cancel: (reason) => reader.cancel(reason),
  });
}

export interface FailureContext {
  host: string;
  /** The model asked for, named in the "not installed" hint; absent for the probe. */
  model?: string;
  call: Call;
  signal: AbortSignal | undefined;
  /** Scrubbed from every message. */
  apiKey: string | undefined;
}

/** Maps whatever the client threw to the kernel's PROVIDER_ERROR, retryable or not. */
export function toSparError(err: unknown, ctx: FailureContext): SparError {
  if (isSparError(err)) return err;
  const clean = (text: string) => (ctx.apiKey ? text.split(ctx.apiKey).join("***") : text);
  const fail = (
    message: string,
    details: { status?: number; retryAfterS?: number; retryable?: boolean } = {},
  ) => providerError(PROVIDER, clean(message), { ...details, cause: err });

  // Whatever else broke, an aborted call is reported as such: the kernel decides if it was its deadline.
  if (ctx.signal?.aborted) return fail("the request was aborted", { retryable: false });
  const status = statusOf(err);
  if (status !== undefined) {
    const server = err instanceof Error ? err.message : String(err);
    if (status === 404 && ctx.model !== undefined) {
      const hint = `run \`ollama pull ${ctx.model}\` first`;
      return fail(`model "${ctx.model}" not found at ${ctx.host} (404 ${server}): ${hint}`, { status });
    }
    return fail(`${status} ${server}`, { status, retryAfterS: parseRetryAfter(ctx.call.retryAfter()) });
  }
  if (err instanceof Unreachable) {
    return fail(
      `cannot reach the local runner at ${ctx.host} — is \`ollama serve\` running? (${rootCause(err)})`,
    );
  }
  if (err instanceof BrokenReply) return fail(`the connection broke mid-reply: ${rootCause(err)}`);
  if (err instanceof SyntaxError) return fail(`the reply was not valid JSON: ${err.message}`);
  if (err instanceof Error && err.message === NO_DONE) {
    return fail("the stream ended before the reply was complete");
  }
  // Left: IncompleteReply, and an `{"error": …}` line the runner sent mid-stream after answering 200.
  return fail(err instanceof Error ? err.message : String(err));
}

/**
 * The HTTP status of the client's ResponseError. ollama-js does not export that class, so it is known
 * by its name and its numeric `status_code`.
 */
function statusOf(err: unknown): number | undefined {
  if (!(err instanceof Error) || err.name !== "ResponseError") return undefined;
  const code: unknown = (err as Error & { status_code?: unknown }).status_code;
  return typeof code === "number" ? code : undefined;
}

/** A cause chain in short, e.g. "fetch failed (connect ECONNREFUSED 127.0.0.1:11434)". */
function rootCause(err: Error): string {
  const chain: string[] = [];
  for (let at: unknown = err.cause; at instanceof Error; at = at.cause) chain.push(at.message);
  // undici says "fetch failed" / "terminated" outside and the useful part inside.
  const [outer, ...rest] = chain;
  const inner = rest.at(-1);
  return inner && inner !== outer ? `${outer} (${inner})` : (outer ?? err.message);
}
