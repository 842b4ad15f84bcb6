/**
 * The cluster budget counters of `bus-redis` (issue 31): each budget's current period is one hash in
 * Redis (`spent`, and a field `r:<call id>` = `<amount>:<ms>` per reservation in flight), and every
 * operation is one Lua script over all the lines of a call, so reservations from every node are
 * counted atomically against the same figures. A counter missing (new, or evicted) is reported, and
 * the budgets plugin reserves again with its seed from the store's usage ledger; it expires after
 * its period. A reservation whose node died stops counting after ORPHAN_MS. The rules are
 * `bus-local`'s, and both pass test/contract/bus.test.ts.
 */
import type { Redis } from "ioredis";
import type { BudgetCounters, BudgetLine, BudgetVerdict } from "../../sdk/index.js";

/** Longer than any model call may take (a call's deadline is minutes), short enough to free a dead node's hold. */
const ORPHAN_MS = 30 * 60 * 1000;

const PRELUDE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function held(key)
  local all = redis.call('HGETALL', key)
  local sum = 0
  for j = 1, #all, 2 do
    if string.sub(all[j], 1, 2) == 'r:' then
      local amount, at = string.match(all[j + 1], '^(%d+):(%d+)$')
      if tonumber(at) < now - ${ORPHAN_MS} then redis.call('HDEL', key, all[j])
      else sum = sum + tonumber(amount) end
    end
  end
  return sum
end
`;

// KEYS the lines; ARGV id, then per line: limit amount seed force expires_at
const RESERVE = `${PRELUDE}
local id = ARGV[1]
local missing = {}
for i = 1, #KEYS do
  if ARGV[(i - 1) * 5 + 4] == '' and redis.call('EXISTS', KEYS[i]) == 0 then missing[#missing + 1] = i - 1 end
end
if #missing > 0 then return {2, missing} end
for i = 1, #KEYS do
  local b = (i - 1) * 5 + 1
  local spent = tonumber(redis.call('HGET', KEYS[i], 'spent') or ARGV[b + 3])
  local h = held(KEYS[i])
  if ARGV[b + 4] ~= '1' and spent + h >= tonumber(ARGV[b + 1]) then return {0, i - 1, spent, h} end
end
for i = 1, #KEYS do
  local b = (i - 1) * 5 + 1
  redis.call('HSETNX', KEYS[i], 'spent', ARGV[b + 3])
  redis.call('HSET', KEYS[i], 'r:' .. id, ARGV[b + 2] .. ':' .. now)
  redis.call('PEXPIREAT', KEYS[i], ARGV[b + 5])
end
return {1}`;

// KEYS the lines; ARGV id, then per line: amount warn_at
const SETTLE = `
local crossed = {}
for i = 1, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    redis.call('HDEL', KEYS[i], 'r:' .. ARGV[1])
    local amount = tonumber(ARGV[i * 2])
    local after = redis.call('HINCRBY', KEYS[i], 'spent', ARGV[i * 2])
    local warn = tonumber(ARGV[i * 2 + 1])
    if warn > 0 and after - amount < warn and after >= warn then crossed[#crossed + 1] = i - 1 end
  end
end
return crossed`;

// KEYS the lines; ARGV id
const RELEASE = `
for i = 1, #KEYS do redis.call('HDEL', KEYS[i], 'r:' .. ARGV[1]) end
return 1`;

// KEYS the counters: per key {exists, spent, reserved}
const READ = `${PRELUDE}
local out = {}
for i = 1, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    out[#out + 1] = 1
    out[#out + 1] = tonumber(redis.call('HGET', KEYS[i], 'spent') or '0')
    out[#out + 1] = held(KEYS[i])
  else
    out[#out + 1] = 0; out[#out + 1] = 0; out[#out + 1] = 0
  end
end
return out`;

type BudgetRedis = Redis & {
  sparBudgetReserve(...args: (string | number)[]): Promise<[number, number[] | number, number?, number?]>;
  sparBudgetSettle(...args: (string | number)[]): Promise<number[]>;
  sparBudgetRelease(...args: (string | number)[]): Promise<number>;
  sparBudgetRead(...args: (string | number)[]): Promise<number[]>;
};

const whole = (n: number) => String(Math.max(0, Math.round(n)));

/** The budget counters on `redis`, under `<prefix>:budget:<counter key>`. */
export function createRedisBudgets(options: { redis: Redis; prefix: string }): BudgetCounters {
  const redis = options.redis as BudgetRedis;
  const keyed = (key: string) => `${options.prefix}:budget:${key}`;
  const command = (name: string, lua: string) =>
    // Every script's key count varies with the call: it is given first (numberOfKeys unset).
    redis.defineCommand(name, { lua });
  command("sparBudgetReserve", RESERVE);
  command("sparBudgetSettle", SETTLE);
  command("sparBudgetRelease", RELEASE);
  command("sparBudgetRead", READ);

  return {
    async reserve(id, lines: readonly BudgetLine[]): Promise<BudgetVerdict> {
      const args = lines.flatMap((l) => [
        whole(l.limit),
        whole(l.amount),
        l.seed === undefined ? "" : whole(l.seed),
        l.force ? "1" : "0",
        String(Math.round(l.expires_at)),
      ]);
      const reply = await redis.sparBudgetReserve(
        lines.length,
        ...lines.map((l) => keyed(l.key)),
        id,
        ...args,
      );
      if (reply[0] === 1) return { ok: true };
      if (reply[0] === 2) {
        const missing = (reply[1] as number[]).map((i) => lines[i]?.key as string);
        return { ok: false, missing };
      }
      return { ok: false, index: reply[1] as number, spent: reply[2] ?? 0, reserved: reply[3] ?? 0 };
    },
    async settle(id, keys, amounts, warnAt) {
      const args = keys.flatMap((_, i) => [whole(amounts[i] ?? 0), whole(warnAt[i] ?? 0)]);
      return redis.sparBudgetSettle(keys.length, ...keys.map(keyed), id, ...args);
    },
    async release(id, keys) {
      if (keys.length > 0) await redis.sparBudgetRelease(keys.length, ...keys.map(keyed), id);
    },
    async read(keys) {
      if (keys.length === 0) return [];
      const flat = await redis.sparBudgetRead(keys.length, ...keys.map(keyed));
      return keys.map((_, i) =>
        flat[i * 3] === 1 ? { spent: flat[i * 3 + 1] ?? 0, reserved: flat[i * 3 + 2] ?? 0 } : null,
      );
    },
  };
}
