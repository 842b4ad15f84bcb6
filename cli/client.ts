import { loadConfig } from "../kernel/config.js";
import { type ErrorCode, SparError } from "../kernel/errors.js";
import { loadDotEnv, resolveHome } from "../kernel/home.js";

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
 * Calls the daemon's API and returns the parsed body. An error response becomes a SparError with
 * the daemon's code and message; a daemon that is not running becomes DAEMON_UNREACHABLE.
 */
export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const base = daemonUrl();
  let response: Response;
  try {
    response = await fetch(`${base}${path}`, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new SparError("DAEMON_UNREACHABLE", `Spar is not running at ${base}; start it with: spar start`);
  }
  const text = await response.text();
  const data = text ? (JSON.parse(text) as unknown) : undefined;
  if (!response.ok) {
    const error = (data as { error?: { code?: string; message?: string } } | undefined)?.error;
    throw new SparError(
      (error?.code as ErrorCode | undefined) ?? "INTERNAL",
      error?.message ?? `the daemon answered ${response.status}`,
    );
  }
  return data as T;
}
