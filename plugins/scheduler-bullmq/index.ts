/**
 * The clustered gorilla scheduler (kind `scheduler`, chosen with `[plugins] scheduler =
 * "scheduler-bullmq"`): the gorilla runtime of lib/gorillas fired by BullMQ job schedulers on one
 * Redis (firing.ts), so every daemon sharing that Redis and the store runs each fire exactly once,
 * and a gorilla is unleashed or caged from any of them.
 */

import { definePlugin } from "../../sdk/index.js";
import { type GorillasSettings, gorillaTimezone, installGorillas } from "../../sdk/kits/gorillas.js";
import { connectRedis, type RedisSettings, redisUrl } from "../../sdk/kits/redis.js";
import { createBullmqFiring } from "./firing.js";

export default definePlugin<{ gorillas: GorillasSettings; redis: RedisSettings }>({
  id: "scheduler-bullmq",
  async apply(api, { gorillas, redis }) {
    const timezone = gorillaTimezone(gorillas);
    const url = redisUrl(redis, "scheduler-bullmq", api.env);
    // Unreachable Redis stops the daemon at start, rather than at the first fire.
    (
      await connectRedis(url, { plugin: "scheduler-bullmq", purpose: "check", maxRetriesPerRequest: null })
    ).disconnect();
    const firing = createBullmqFiring({ url, prefix: redis.prefix, log: api.log });
    installGorillas(api, gorillas, firing, timezone);
  },
});
