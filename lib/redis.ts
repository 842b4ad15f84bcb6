/**
 * Redis for the plugins that share `[redis]` (bus-redis, scheduler-bullmq): the URL read from the
 * environment variable `[redis] url_env` names (never from config.toml, so a password stays out of
 * files), and a connection checked with a PING at start. A URL is only ever shown redacted.
 */
import { Redis } from "ioredis";
import { SparError } from "../sdk/index.js";

/** How long the start-up check waits for Redis to answer. */
const CONNECT_TIMEOUT_MS = 5_000;

/** The `[redis]` table, declared with the same schema by every plugin that reads it. */
export interface RedisSettings {
  url_env: string;
  prefix: string;
}

/** A URL with its password (and user) replaced, for messages and logs. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    if (parsed.username) parsed.username = "***";
    return parsed.toString();
  } catch {
    return "(an unparsable URL)";
  }
}

/** The Redis URL from the environment: CONFIG_INVALID naming the variable when unset or not redis://. */
export function redisUrl(settings: RedisSettings, plugin: string, env: NodeJS.ProcessEnv): string {
  const url = env[settings.url_env]?.trim();
  if (!url) {
    throw new SparError(
      "CONFIG_INVALID",
      `${plugin} needs Redis: set ${settings.url_env} to its URL (redis://host:6379/0), or name another variable in [redis] url_env`,
      { path: "redis.url_env", env: settings.url_env },
    );
  }
  let protocol: string;
  try {
    protocol = new URL(url).protocol;
  } catch {
    protocol = "";
  }
  if (protocol !== "redis:" && protocol !== "rediss:") {
    throw new SparError(
      "CONFIG_INVALID",
      `${settings.url_env} is not a redis:// or rediss:// URL: ${redactUrl(url)}`,
      { path: "redis.url_env", env: settings.url_env },
    );
  }
  return url;
}

/**
 * A new connection, ready: PLUGIN_FAILED (with the URL redacted) when Redis does not answer a PING
 * within CONNECT_TIMEOUT_MS. BullMQ requires `maxRetriesPerRequest: null` (commands wait while
 * Redis is away); the bus fails a command after a few retries instead, so a message is refused
 * rather than held.
 */
export async function connectRedis(
  url: string,
  options: { plugin: string; purpose: string; maxRetriesPerRequest: number | null },
): Promise<Redis> {
  const redis = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: options.maxRetriesPerRequest,
    connectTimeout: CONNECT_TIMEOUT_MS,
    connectionName: `spar-${options.purpose}`,
  });
  // Reconnections after start are ioredis's job; an error event without a listener would crash.
  redis.on("error", () => undefined);
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      redis.connect().then(() => redis.ping()),
      new Promise((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no answer within ${CONNECT_TIMEOUT_MS} ms`)),
          CONNECT_TIMEOUT_MS,
        );
      }),
    ]);
    return redis;
  } catch (err) {
    redis.disconnect();
    const reason = err instanceof Error ? err.message : String(err);
    throw new SparError(
      "PLUGIN_FAILED",
      `${options.plugin} cannot reach Redis at ${redactUrl(url)}: ${reason.split(url).join(redactUrl(url))}`,
      { plugin: options.plugin },
    );
  } finally {
    clearTimeout(timer);
  }
}
