import { errorFromBody } from "../lib/client/errors.js";
import { readEvents, type StreamEvent } from "../lib/client/sse.js";
import { resolveHome, withDotEnv } from "../lib/home.js";
import { CLI_KEY_ID, cliPublicKeyPath, loadCliKey } from "../lib/keys.js";
import { isLoopbackHost } from "../lib/loopback.js";
import { signedHeaders } from "../lib/sign.js";
import { readApiListen } from "../lib/toml-file.js";
import { parseListen } from "../sdk/config.js";
import { SparError } from "../sdk/errors.js";

export type { StreamEvent };

/**
 * Where the daemon listens, from `SPAR_API_LISTEN` or the data dir's config.toml: only `api_listen`
 * is read there, so a typo elsewhere in the file does not cut the CLI off from a running daemon.
 */
export function daemonUrl(env = process.env): string {
  const home = resolveHome(env);
  const listen = readApiListen(home, withDotEnv(home, env));
  parseListen(listen);
  const at = listen.lastIndexOf(":");
  let host = listen.slice(0, at);
  if (host === "0.0.0.0") host = "127.0.0.1";
  if (host === "::" || host === "[::]") host = "[::1]";
  return `http://${host}:${listen.slice(at + 1)}`;
}

/**
 * What a call may add: headers (Accept, Idempotency-Key), a signal that abandons the request, and
 * the error for a daemon that went away with the request in hand (by default DAEMON_UNREACHABLE
 * saying so): a chat says what became of its message.
 */
export interface RequestExtras {
  headers?: Record<string, string>;
  signal?: AbortSignal;
  lost?: () => SparError;
}

/** Set once the daemon has refused the CLI's key and accepted an unsigned request instead. */
let unsignedFallback = false;

/**
 * Every request the CLI sends is signed with its own key (`keys/cli.key`, authorized as `cli` by
 * `spar init`): method, target URI and, with a body, its Content-Digest (lib/sign.ts, as any client).
 * A daemon that no longer knows that key (`spar key remove cli --force`) gets the request again
 * unsigned when it is on this machine, which it accepts while `[auth] allow_unsigned_loopback` is
 * on; otherwise the error says how to authorize the key again.
 */
async function send(
  method: string,
  path: string,
  body: unknown,
  extras: RequestExtras = {},
): Promise<Response> {
  const base = daemonUrl();
  const url = `${base}${path}`;
  const text = body === undefined ? undefined : JSON.stringify(body);
  const headers: Record<string, string> = text === undefined ? {} : { "content-type": "application/json" };
  Object.assign(headers, extras.headers);
  const home = resolveHome();
  const privateKey = unsignedFallback ? undefined : loadCliKey(home);
  const attempt = (signed: boolean) => {
    const signature =
      signed && privateKey ? signedHeaders({ method, url, body: text, keyId: CLI_KEY_ID, privateKey }) : {};
    return fetch(url, { method, headers: { ...headers, ...signature }, body: text, signal: extras.signal });
  };
  try {
    const response = await attempt(true);
    if (!privateKey || response.status !== 401) return response;
    const refusal = await response.text();
    if (!isUnknownCliKey(refusal)) return replay(response, refusal);
    const reauthorize = `authorize it again with: spar key add ${CLI_KEY_ID} ${cliPublicKeyPath(home)}`;
    const unsigned = isLoopbackHost(new URL(base).hostname) ? await attempt(false) : undefined;
    if (!unsigned || unsigned.status === 401) {
      throw new SparError(
        "UNAUTHORIZED",
        `the daemon at ${base} does not know the CLI's key "${CLI_KEY_ID}" (unknown key id), ` +
          `and it accepts no unsigned requests from here; ${reauthorize}`,
      );
    }
    unsignedFallback = true;
    process.stderr.write(
      `spar: the daemon does not know the CLI's key "${CLI_KEY_ID}", so requests go unsigned (it accepts ` +
        `them from this machine); ${reauthorize}\n`,
    );
    return unsigned;
  } catch (err) {
    if (extras.signal?.aborted || err instanceof SparError) throw err;
    if (isConnectionLost(err)) throw lostError(base, extras);
    throw new SparError("DAEMON_UNREACHABLE", `Spar is not running at ${base}; start it with: spar start`);
  }
}

/**
 * The daemon closed a connection that had carried the request (it crashed, or was killed): not the
 * same as one refused, where nothing was sent. undici reports it as its socket error, or a reset.
 */
function isConnectionLost(err: unknown): boolean {
  const code = (err as { cause?: { code?: unknown } }).cause?.code;
  return code === "UND_ERR_SOCKET" || code === "ECONNRESET" || code === "EPIPE";
}

function lostError(base: string, extras: RequestExtras): SparError {
  return (
    extras.lost?.() ??
    new SparError(
      "DAEMON_UNREACHABLE",
      `Spar at ${base} closed the connection before it answered (it stopped or crashed); spar status tells whether it runs`,
    )
  );
}

/**
 * The daemon's refusal of a key it does not know. Its code, UNAUTHORIZED, covers every bad
 * signature: the message (lib/http-signatures.ts) is what tells this one apart.
 */
function isUnknownCliKey(text: string): boolean {
  try {
    const message = (JSON.parse(text) as { error?: { message?: unknown } }).error?.message;
    return typeof message === "string" && message.includes(`unknown key id "${CLI_KEY_ID}"`);
  } catch {
    return false;
  }
}

/** A response whose body was read, to be read again by the caller. */
function replay(response: Response, text: string): Response {
  return new Response(text, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}

async function failure(response: Response): Promise<SparError> {
  return errorFromBody(response.status, await response.text());
}

/**
 * Calls the daemon's API and returns the parsed body. An error response becomes a SparError with
 * the daemon's code and message; a daemon that is not running becomes DAEMON_UNREACHABLE.
 */
export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await send(method, path, body);
  if (!response.ok) throw await failure(response);
  const text = await response.text();
  return (text ? JSON.parse(text) : undefined) as T;
}

/**
 * Calls a streaming route (`Accept: text/event-stream`) and yields its events as they arrive. An
 * error before the stream starts is thrown like `api`'s.
 */
export async function* apiStream(
  method: string,
  path: string,
  body?: unknown,
  extras: RequestExtras = {},
): AsyncGenerator<StreamEvent> {
  const response = await send(method, path, body, {
    ...extras,
    headers: { ...extras.headers, accept: "text/event-stream" },
  });
  if (!response.ok) throw await failure(response);
  if (!response.body) return;
  yield* streamOf(response.body as unknown as AsyncIterable<Uint8Array>, extras);
}

/** The events of a server-sent stream; a daemon gone mid-stream is the call's `lost` error. */
function streamOf(body: AsyncIterable<Uint8Array>, extras: RequestExtras): AsyncGenerator<StreamEvent> {
  return readEvents(body, (err) => {
    if (extras.signal?.aborted || !isConnectionLost(err)) throw err;
    throw lostError(daemonUrl(), extras);
  });
}
