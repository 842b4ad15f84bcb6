/**
 * The cluster bus (kind `bus`, `[plugins] bus = "bus-redis"`): daemons that share one Redis share
 * their events (one global order, resumable seqs), their quota windows, budget counters and each fighter's turn lease. `[redis] url_env` names
 * the variable holding the URL; `[redis] prefix` namespaces the keys, so clusters can share a server.
 */

import { definePlugin } from "../../sdk/index.js";
import { connectRedis, type RedisSettings, redisUrl } from "../../sdk/kits/redis.js";
import { createRedisBudgets } from "./budgets.js";
import { createRedisEvents } from "./events.js";
import { createRedisLeases } from "./leases.js";
import { createRedisQuotas } from "./quotas.js";

export default definePlugin<{ redis: RedisSettings }>({
  id: "bus-redis",
  apply(api, { redis: settings }) {
    api.hooks.bus.open.tap(async (options) => {
      const redis = await connectRedis(redisUrl(settings, "bus-redis", api.env), {
        plugin: "bus-redis",
        purpose: "bus",
        maxRetriesPerRequest: 3,
      });
      const events = await createRedisEvents({
        redis,
        prefix: settings.prefix,
        historySize: options.historySize,
        log: api.log,
        onListenerError: options.onListenerError,
      });
      return {
        events,
        quotas: createRedisQuotas({ redis, prefix: settings.prefix, windowMs: options.quotaWindowMs }),
        budgets: createRedisBudgets({ redis, prefix: settings.prefix }),
        leases: createRedisLeases({ redis, prefix: settings.prefix }),
        shared: true,
        async close() {
          await events.close();
          redis.disconnect();
        },
      };
    });
  },
});
