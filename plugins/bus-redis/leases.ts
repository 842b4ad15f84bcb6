/**
 * Per-fighter turn leases on Redis (`bus-redis`): one node at a time runs a fighter's turns. A lease
 * is a key set only if absent, with a time to live renewed while its turn runs, so a node that dies
 * holding one frees it within LEASE_MS. Every grant takes the next number of the fighter's fence
 * counter in the same script. A node that cannot renew in time aborts its turn (`lost`); the next
 * holder fails the turn it left running (`turns.abandon`), after which the store refuses that
 * turn's late writes.
 */

import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import { cancellation, type TurnLease, type TurnLeases } from "../../sdk/index.js";

/** How long a lease lives without renewal: the longest a dead node's fighter waits. */
export const LEASE_MS = 5000;
/** A node waiting for a lease looks again after this long, doubling up to the cap. */
const POLL_MIN_MS = 2;
const POLL_MAX_MS = 50;

// KEYS lease fence; ARGV token ms → the new fence, or 0 when another node holds it.
const ACQUIRE = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return redis.call('INCR', KEYS[2]) end
return 0`;
// KEYS lease; ARGV token ms → 1 while still ours.
const RENEW = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`;
// KEYS lease; ARGV token
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

type LeaseRedis = Redis & {
  sparLeaseAcquire(lease: string, fence: string, token: string, ms: number): Promise<number>;
  sparLeaseRenew(lease: string, token: string, ms: number): Promise<number>;
  sparLeaseRelease(lease: string, token: string): Promise<number>;
};

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(done, ms);
    function done() {
      signal.removeEventListener("abort", stop);
      resolve();
    }
    function stop() {
      clearTimeout(timer);
      reject(signal.reason);
    }
    signal.addEventListener("abort", stop, { once: true });
  });

/** The leases on `redis`, under `<prefix>:lease:<fighter id>` and `<prefix>:fence:<fighter id>`. */
export function createRedisLeases(options: { redis: Redis; prefix: string; leaseMs?: number }): TurnLeases {
  const redis = options.redis as LeaseRedis;
  const leaseMs = options.leaseMs ?? LEASE_MS;
  redis.defineCommand("sparLeaseAcquire", { numberOfKeys: 2, lua: ACQUIRE });
  redis.defineCommand("sparLeaseRenew", { numberOfKeys: 1, lua: RENEW });
  redis.defineCommand("sparLeaseRelease", { numberOfKeys: 1, lua: RELEASE });

  return {
    async acquire(fighterId, signal) {
      const key = `${options.prefix}:lease:${fighterId}`;
      const token = randomUUID();
      let wait = POLL_MIN_MS;
      let fence = 0;
      for (;;) {
        signal.throwIfAborted();
        fence = await redis.sparLeaseAcquire(key, `${options.prefix}:fence:${fighterId}`, token, leaseMs);
        if (fence > 0) break;
        await sleep(wait, signal);
        wait = Math.min(wait * 2, POLL_MAX_MS);
      }
      const lost = new AbortController();
      const renewing = setInterval(() => {
        redis.sparLeaseRenew(key, token, leaseMs).then(
          (ours) => {
            if (ours !== 1) lose("another node took the fighter's turn lease");
          },
          (err: unknown) => lose(`the turn lease could not be renewed (${String(err)})`),
        );
      }, leaseMs / 3);
      renewing.unref();
      function lose(why: string) {
        clearInterval(renewing);
        if (!lost.signal.aborted) lost.abort(cancellation(why));
      }
      const lease: TurnLease = {
        fence,
        lost: lost.signal,
        async release() {
          clearInterval(renewing);
          await redis.sparLeaseRelease(key, token);
        },
      };
      return lease;
    },
  };
}
