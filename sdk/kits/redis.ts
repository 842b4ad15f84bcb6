/**
 * `spar/sdk/redis`: Redis for plugins that share the `[redis]` table (bus-redis, scheduler-bullmq):
 * the URL read from the environment variable `[redis] url_env` names (never from config.toml, so a
 * password stays out of files), a connection checked with a PING at start, and URLs only ever
 * shown redacted.
 *
 * @example
 * import { connectRedis, redisUrl } from "spar/sdk/redis";
 * const redis = await connectRedis(redisUrl(settings, api.id, api.env), { plugin: api.id, purpose: "bus", maxRetriesPerRequest: 3 });
 */
export { connectRedis, type RedisSettings, redactUrl, redisUrl } from "../../lib/redis.js";
