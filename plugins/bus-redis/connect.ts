/**
 * The Redis connection of `bus-redis`, from the URL in the variable `[redis] url_env` names. Errors
 * name the host, never the password.
 */
import { Redis } from "ioredis";
import { SparError } from "../../kernel/sdk.js";

export interface RedisSettings {
  url_env: string;
  prefix: string;
}

/** How long start-up waits for Redis before it gives up. */
const CONNECT_TIMEOUT_MS = 5000;

/** `redis://host:port/db` with any user and password left out, for messages. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return "(an unparsable URL)";
  }
}

/** Connects to the Redis the settings name; CONFIG_INVALID or PLUGIN_FAILED when it cannot. */
export async function connectRedis(
  settings: RedisSettings,
  env: NodeJS.ProcessEnv = process.env,
): Promise<Redis> {
  const url = env[settings.url_env];
  if (!url) {
    throw new SparError(
      "CONFIG_INVALID",
      `bus-redis needs the Redis URL in the environment variable ${settings.url_env} ([redis] url_env), e.g. redis://127.0.0.1:6379/0`,
      { path: "redis.url_env" },
    );
  }
  if (!/^rediss?:\/\//.test(url)) {
    throw new SparError(
      "CONFIG_INVALID",
      `${settings.url_env} must be a redis:// or rediss:// URL, not ${redactUrl(url)}`,
      { path: "redis.url_env" },
    );
  }
  const redis = new Redis(url, {
    lazyConnect: true,
    connectTimeout: CONNECT_TIMEOUT_MS,
    maxRetriesPerRequest: 3,
    retryStrategy: (attempt) => Math.min(attempt * 100, 2000),
  });
  // Reconnections are ioredis's job; an error event without a listener would crash the process.
  redis.on("error", () => undefined);
  try {
    await redis.connect();
  } catch (err) {
    redis.disconnect();
    const why = String((err as Error).message ?? err).replaceAll(url, redactUrl(url));
    throw new SparError("PLUGIN_FAILED", `bus-redis cannot reach Redis at ${redactUrl(url)}: ${why}`, {
      plugin: "bus-redis",
    });
  }
  return redis;
}
