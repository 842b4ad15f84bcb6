/**
 * Cycle slots: one Redis key per gorilla, held by the node whose cycle runs, so a gorilla runs one
 * cycle at a time across the cluster (a fire that finds the slot taken is recorded `skipped`). The
 * holder renews the key's lease every HEARTBEAT_MS; a node that dies stops renewing, the key expires
 * after SLOT_TTL_MS, and the next sweep (any node, every SWEEP_MS) records that node's run `failed`.
 * Only runs whose slot is gone are failed: a live node's cycle keeps its slot, so no node fails
 * another's work (scheduler-croner's `runs.abandon` at start would).
 *
 * The same heartbeat reads the gorilla's abort key: caging on another node writes the holder's
 * token there (and says so on the pub/sub channel, see firing.ts), so a cage reaches the cycle even
 * when the pub/sub message is lost.
 *
 * Keys (`<prefix>` is `[redis] prefix`): `<prefix>:gorilla-slot:<name>` = "<token>" or
 * "<token> <run id>"; `<prefix>:gorilla-abort:<name>` = "<token>"; `<prefix>:gorilla-running` is the
 * set of "<name> <run id>" that bound runs to slots, for the sweep.
 */
import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import { isSparError, type Logger } from "../../sdk/index.js";
import type { CycleSlot, GorillaRecords } from "../../sdk/kits/gorillas.js";

/** How long a slot outlives its holder's last heartbeat. */
export const SLOT_TTL_MS = 10_000;
const HEARTBEAT_MS = 2_000;
/** How long a cage's abort request waits for the holder to read it. */
const ABORT_TTL_MS = 60_000;
/** Runs of a gorilla looked at, newest first, when it is swept from the store at start. */
const SWEEP_DEPTH = 100;

/** Sets the key to ARGV[2] (keeping its TTL fresh) only while it is held by the token ARGV[1]. */
const RENEW = `
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, string.len(ARGV[1])) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
end
return 0`;
/** Deletes the slot (and its entry in the running set) only while it is held by the token ARGV[1]. */
const RELEASE = `
local v = redis.call('GET', KEYS[1])
if ARGV[2] ~= '' then redis.call('SREM', KEYS[2], ARGV[2]) end
if v and string.sub(v, 1, string.len(ARGV[1])) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0`;

/** What a slot key holds. */
function parse(value: string | null): { token: string; run_id?: string } | undefined {
  if (!value) return undefined;
  const [token, run_id] = value.split(" ");
  return run_id ? { token: token as string, run_id } : { token: token as string };
}

export interface SlotOptions {
  redis: Redis;
  prefix: string;
  /** The gorillas' runs: a stopped node's are recorded failed. */
  runs: GorillaRecords["runs"];
  log: Logger;
  /** A cage from another node reached a cycle of this node through its abort key. */
  onAbort(name: string): void;
}

/** The cycle slots of one node. */
export function createSlots({ redis, prefix, runs, log, onAbort }: SlotOptions) {
  const slotKey = (name: string) => `${prefix}:gorilla-slot:${name}`;
  const abortKey = (name: string) => `${prefix}:gorilla-abort:${name}`;
  const runningKey = `${prefix}:gorilla-running`;
  /** The slots this node holds, by token: each settles once released, for `drain`. */
  const held = new Map<string, Promise<void>>();

  async function fail(name: string, runId: string): Promise<boolean> {
    try {
      await runs.finish(runId, {
        outcome: "failed",
        usage: { input_tokens: 0, output_tokens: 0 },
        error: "the node running this cycle stopped before it ended (its cycle slot expired)",
      });
      log.warn("a gorilla run left running by a stopped node was recorded failed", {
        gorilla: name,
        run_id: runId,
      });
      return true;
    } catch (err) {
      // Already ended (its node finished it after all) or pruned: nothing to do.
      if (isSparError(err, "CONFLICT") || isSparError(err, "NOT_FOUND")) return false;
      throw err;
    }
  }

  return {
    /** Takes the gorilla's slot, or answers who holds it. */
    async claim(name: string): Promise<CycleSlot | { busy: string | undefined }> {
      const token = randomUUID();
      const taken = await redis.set(slotKey(name), token, "PX", SLOT_TTL_MS, "NX");
      if (taken !== "OK") return { busy: parse(await redis.get(slotKey(name)))?.run_id };
      let gone: () => void = () => undefined;
      held.set(
        token,
        new Promise<void>((resolve) => {
          gone = resolve;
        }),
      );
      let value = token;
      let member = "";
      let bound: Promise<unknown> = Promise.resolve();
      const beat = setInterval(() => {
        void (async () => {
          await redis.eval(RENEW, 1, slotKey(name), token, value, SLOT_TTL_MS);
          if ((await redis.get(abortKey(name))) === token) onAbort(name);
        })().catch((err: unknown) =>
          log.warn("a gorilla's cycle slot could not be renewed", { gorilla: name, error: String(err) }),
        );
      }, HEARTBEAT_MS);
      beat.unref();
      let released: Promise<void> | undefined;
      return {
        bind(runId) {
          value = `${token} ${runId}`;
          member = `${name} ${runId}`;
          bound = Promise.all([
            redis.eval(RENEW, 1, slotKey(name), token, value, SLOT_TTL_MS),
            redis.sadd(runningKey, member),
          ]).catch((err: unknown) =>
            log.warn("a gorilla's run could not be bound to its slot", { gorilla: name, error: String(err) }),
          );
        },
        release() {
          released ??= (async () => {
            clearInterval(beat);
            await bound;
            await redis.eval(RELEASE, 2, slotKey(name), runningKey, token, member);
          })().finally(() => {
            held.delete(token);
            gone();
          });
          return released;
        },
      };
    },

    /**
     * Asks the node holding the gorilla's slot to abort its cycle: the run it is bound to, if any,
     * and a promise that settles once the slot is let go (or after `withinMs`).
     */
    async abort(name: string, withinMs: number): Promise<{ run_id?: string; ended: Promise<void> }> {
      const holder = parse(await redis.get(slotKey(name)));
      if (!holder) return { ended: Promise.resolve() };
      await redis.set(abortKey(name), holder.token, "PX", ABORT_TTL_MS);
      const ended = (async () => {
        const deadline = Date.now() + withinMs;
        while (Date.now() < deadline && parse(await redis.get(slotKey(name)))?.token === holder.token) {
          await new Promise((r) => setTimeout(r, 200));
        }
      })().catch(() => undefined);
      return { ...(holder.run_id ? { run_id: holder.run_id } : {}), ended };
    },

    /** Records failed the bound runs whose slot is gone (their node stopped); how many. */
    async sweep(): Promise<number> {
      let failed = 0;
      for (const member of await redis.smembers(runningKey)) {
        const [name, runId] = member.split(" ") as [string, string];
        if (parse(await redis.get(slotKey(name)))?.run_id === runId) continue;
        if (await fail(name, runId)) failed += 1;
        await redis.srem(runningKey, member);
      }
      return failed;
    },

    /**
     * At start, from the store: the gorilla's runs left `running` whose slot is gone or is bound to
     * another run are recorded failed (this covers a node that died before it bound its run). A slot
     * not yet bound may be that very run's: it is left for the sweep.
     */
    async sweepStore(name: string): Promise<number> {
      const running = (await runs.list(name, { limit: SWEEP_DEPTH })).filter(
        (run) => run.outcome === "running",
      );
      let failed = 0;
      for (const run of running) {
        const holder = parse(await redis.get(slotKey(name)));
        if (holder && (holder.run_id === undefined || holder.run_id === run.id)) continue;
        if (await fail(name, run.id)) failed += 1;
      }
      return failed;
    },

    /** Waits for the slots this node holds to be released (bounded by the caller's cycles). */
    async drain(): Promise<void> {
      await Promise.all(held.values());
    },
  };
}

export type Slots = ReturnType<typeof createSlots>;
