/**
 * The cluster quota windows of `bus-redis`: each fighter's sliding window lives in Redis (requests
 * and settled tokens as sorted sets scored by time, reservations as a hash), and every operation is
 * one Lua script, so admissions from every node are counted atomically against one window. Time is
 * Redis's own (`TIME`), so nodes whose clocks differ still share one window. The rules are
 * `bus-local`'s, and both pass test/contract/bus.test.ts.
 */

import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import type { Admission, QuotaLimits, QuotaWindows, Reservation } from "../../sdk/index.js";

/** A reservation its node never settled (the node died) stops counting after this long past the window. */
const ORPHAN_MS = 10 * 60 * 1000;

/**
 * Shared by every script: the clock, pruning, the sums, and `blocked(want)`, which answers nil when
 * `want` tokens and one more request fit, else the reason and the milliseconds until they would.
 */
const PRELUDE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[1])
local req, tok, res = KEYS[1], KEYS[2], KEYS[3]
redis.call('ZREMRANGEBYSCORE', req, '-inf', now - window)
redis.call('ZREMRANGEBYSCORE', tok, '-inf', now - window)
local function count(member) return tonumber(string.match(member, ':(%d+)$')) end
local function settled()
  local toks = redis.call('ZRANGE', tok, 0, -1, 'WITHSCORES')
  local sum = 0
  for i = 1, #toks, 2 do sum = sum + count(toks[i]) end
  return sum, toks
end
local function reserved()
  local all = redis.call('HGETALL', res)
  local sum = 0
  for i = 1, #all, 2 do
    local tokens, at = string.match(all[i + 1], '^(%d+):(%d+)$')
    if tonumber(at) < now - window - ${ORPHAN_MS} then redis.call('HDEL', res, all[i])
    else sum = sum + tonumber(tokens) end
  end
  return sum
end
-- After the settled entries leave the window in time order, when do 'want' more tokens fit?
local function tokensFree(used, toks, want, tpm)
  for i = 1, #toks, 2 do
    used = used - count(toks[i])
    if used == 0 or used + want <= tpm then return tonumber(toks[i + 1]) + window - now end
  end
  return window
end
local function blocked(want, rpm, tpm)
  local n = redis.call('ZCARD', req)
  if n >= rpm then
    local oldest = redis.call('ZRANGE', req, n - rpm, n - rpm, 'WITHSCORES')
    return 'requests', tonumber(oldest[2]) + window - now
  end
  local sum, toks = settled()
  local used = sum + reserved()
  if used == 0 or used + want <= tpm then return nil end
  return 'tokens', tokensFree(used, toks, want, tpm)
end
`;

// KEYS req tok res; ARGV window rpm tpm want id
const ADMIT = `${PRELUDE}
local want = tonumber(ARGV[4])
local reason, ms = blocked(want, tonumber(ARGV[2]), tonumber(ARGV[3]))
if reason then return {0, reason, ms} end
redis.call('ZADD', req, now, ARGV[5])
redis.call('HSET', res, ARGV[5], want .. ':' .. now)
redis.call('PEXPIRE', req, window * 2)
redis.call('PEXPIRE', res, window + ${ORPHAN_MS} * 2)
return {1}`;

// KEYS req tok res; ARGV window tpm id
const START = `${PRELUDE}
local tpm = tonumber(ARGV[2])
local mine = redis.call('HGET', res, ARGV[3])
local want = mine and tonumber(string.match(mine, '^(%d+)')) or 0
local sum, toks = settled()
if sum == 0 or sum + want <= tpm then return {1} end
redis.call('HDEL', res, ARGV[3])
return {0, 'tokens', tokensFree(sum, toks, want, tpm)}`;

// KEYS req tok res; ARGV window id tokens
const SETTLE = `${PRELUDE}
if redis.call('HDEL', res, ARGV[2]) == 0 then return 0 end
if tonumber(ARGV[3]) > 0 then
  redis.call('ZADD', tok, now, ARGV[2] .. ':' .. ARGV[3])
  redis.call('PEXPIRE', tok, window * 2)
end
return 1`;

// KEYS req tok res; ARGV window rpm tpm
const FREES = `${PRELUDE}
local reason, ms = blocked(1, tonumber(ARGV[2]), tonumber(ARGV[3]))
if reason then return math.max(0, ms) end
return 0`;

type ScriptReply = [number, ("requests" | "tokens")?, number?];

type QuotaRedis = Redis & {
  sparAdmit(...args: (string | number)[]): Promise<ScriptReply>;
  sparStart(...args: (string | number)[]): Promise<ScriptReply>;
  sparSettle(...args: (string | number)[]): Promise<number>;
  sparFrees(...args: (string | number)[]): Promise<number>;
};

function admission(reply: ScriptReply, reservation: Reservation): Admission {
  if (reply[0] === 1) return { ok: true, reservation };
  return {
    ok: false,
    reason: reply[1] ?? "tokens",
    retry_after_s: Math.max(1, Math.ceil((reply[2] ?? 0) / 1000)),
  };
}

/** The quota windows on `redis`, under `<prefix>:quota:<fighter id>:…`. */
export function createRedisQuotas(options: { redis: Redis; prefix: string; windowMs: number }): QuotaWindows {
  const redis = options.redis as QuotaRedis;
  redis.defineCommand("sparAdmit", { numberOfKeys: 3, lua: ADMIT });
  redis.defineCommand("sparStart", { numberOfKeys: 3, lua: START });
  redis.defineCommand("sparSettle", { numberOfKeys: 3, lua: SETTLE });
  redis.defineCommand("sparFrees", { numberOfKeys: 3, lua: FREES });
  const keys = (fighterId: string) => {
    const base = `${options.prefix}:quota:${fighterId}`;
    return [`${base}:req`, `${base}:tok`, `${base}:res`];
  };
  const window = options.windowMs;

  return {
    async admit(fighterId, limits: QuotaLimits, reserveTokens) {
      const tokens = Math.max(0, Math.round(reserveTokens));
      const reservation: Reservation = { fighterId, tokens, id: randomUUID() };
      const reply = await redis.sparAdmit(
        ...keys(fighterId),
        window,
        limits.requests_per_minute,
        limits.tokens_per_minute,
        tokens,
        reservation.id as string,
      );
      return admission(reply, reservation);
    },
    async start(reservation, limits) {
      const reply = await redis.sparStart(
        ...keys(reservation.fighterId),
        window,
        limits.tokens_per_minute,
        reservation.id ?? "",
      );
      return admission(reply, reservation);
    },
    async settle(reservation, tokens) {
      await redis.sparSettle(
        ...keys(reservation.fighterId),
        window,
        reservation.id ?? "",
        Math.max(0, Math.round(tokens)),
      );
    },
    async freesInMs(fighterId, limits) {
      return redis.sparFrees(
        ...keys(fighterId),
        window,
        limits.requests_per_minute,
        limits.tokens_per_minute,
      );
    },
  };
}
