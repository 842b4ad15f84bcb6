import { loadConfig } from "../kernel/config.js";
import { type ErrorCode, SparError } from "../kernel/errors.js";
import { loadDotEnv, resolveHome } from "../lib/home.js";
import { contentDigest, signRequest } from "../lib/http-signatures.js";
import { CLI_KEY_ID, loadCliKey } from "../lib/keys.js";

/** Where the daemon listens, from `SPAR_API_LISTEN` or the data dir's config.toml. */
export function daemonUrl(env = process.env): string {
  const home = resolveHome(env);
  loadDotEnv(home, env);
  const listen = loadConfig(home, env).api_listen;
  const at = listen.lastIndexOf(":");
  let host = listen.slice(0, at);
  if (host === "0.0.0.0") host = "127.0.0.1";
  if (host === "::" || host === "[::]") host = "[::1]";
  return `http://${host}:${listen.slice(at + 1)}`;
}

/**
 * Every request the CLI sends is signed with its own key (`keys/cli.key`, authorized as `cli` by
 * `spar init`): method, target URI and, with a body, its Content-Digest.
 */
/** What a call may add: headers (Accept, Idempotency-Key) and a signal that abandons the request. */
export interface RequestExtras {
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

async function send(
  method: string,
  path: string,
  body: unknown,
  extras: RequestExtras = {},
): Promise<Response> {
  const base = daemonUrl();
  const text = body === undefined ? undefined : JSON.stringify(body);
  const headers: Record<string, string> = text === undefined ? {} : { "content-type": "application/json" };
  Object.assign(headers, extras.headers);
  const privateKey = loadCliKey(resolveHome());
  if (privateKey) {
    if (text !== undefined) headers["content-digest"] = contentDigest(text);
    Object.assign(
      headers,
      signRequest({ method, targetUri: `${base}${path}`, headers }, { keyId: CLI_KEY_ID, privateKey }),
    );
  }
  try {
    return await fetch(`${base}${path}`, { method, headers, body: text, signal: extras.signal });
  } catch (err) {
    if (extras.signal?.aborted) throw err;
    throw new SparError("DAEMON_UNREACHABLE", `Spar is not running at ${base}; start it with: spar start`);
  }
}

async function failure(response: Response): Promise<SparError> {
  const text = await response.text();
  let error: { code?: string; message?: string } | undefined;
  try {
    error = (JSON.parse(text) as { error?: { code?: string; message?: string } }).error;
  } catch {
    // Not our error shape: report the status.
  }
  return new SparError(
    (error?.code as ErrorCode | undefined) ?? "INTERNAL",
    error?.message ?? `the daemon answered ${response.status}`,
  );
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

/** One server-sent event: its name and parsed data. */
export interface StreamEvent {
  event: string;
  data: unknown;
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
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let end = buffer.indexOf("\n\n");
    while (end >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const event = /^event: (.*)$/m.exec(block)?.[1] ?? "message";
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (data !== undefined) yield { event, data: JSON.parse(data) as unknown };
      end = buffer.indexOf("\n\n");
    }
  }
}
