/**
 * The bus contract: every bus plugin passes this suite, once per factory. It speaks only the
 * kernel's `Bus` interface: events stamped with increasing seqs and delivered to every listener,
 * resumable from a seq without the deltas, `delivered()` after a node's own events; quota windows
 * that admit exactly the quota of a concurrent burst, reserve a turn's tokens at admission, refuse a
 * queued turn whose settled usage leaves no room, and release a reservation once; budget counters
 * that reserve a call on all its lines or none, exactly under concurrency, seed a missing counter
 * once, settle into the real amount and tell a warning's crossing once. A bus whose opens
 * share state (a cluster bus) is also checked as two nodes: one order of events on both, one window.
 *
 * The clock is the real one (a cluster bus keeps time in its server): windows are a minute, so no
 * test waits for one to slide; the local window's sliding is tested beside it with a fake clock.
 */
import { randomUUID } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { connectRedis } from "../../lib/redis.js";
import { createLocalBus } from "../../plugins/bus-local/bus.js";
import { createRedisBudgets } from "../../plugins/bus-redis/budgets.js";
import { createRedisEvents } from "../../plugins/bus-redis/events.js";
import { createRedisLeases } from "../../plugins/bus-redis/leases.js";
import { createRedisQuotas } from "../../plugins/bus-redis/quotas.js";
import type { Bus, BusOpenOptions, QuotaLimits, SparEvent } from "../../sdk/index.js";
import { serviceUrl } from "../helpers/ci.js";

interface BusFactory {
  name: string;
  /** Opens a bus; with `shared`, a second open in the same test reaches the same state (another node). */
  open(options: BusOpenOptions, namespace: string): Promise<Bus>;
  shared: boolean;
  skip?: string;
}

const REDIS_URL = serviceUrl("SPAR_TEST_REDIS_URL");
const silentLog = { info() {}, warn() {}, error() {}, debug() {} };

const FACTORIES: BusFactory[] = [
  { name: "bus-local", open: async (options) => createLocalBus(options), shared: false },
  {
    name: "bus-redis",
    shared: true,
    skip: REDIS_URL
      ? undefined
      : "SPAR_TEST_REDIS_URL is not set (CI sets it; redis://127.0.0.1:6379/0 here)",
    async open(options, namespace) {
      const redis = await connectRedis(process.env.SPAR_TEST_REDIS_URL as string, {
        plugin: "tests",
        purpose: "tests",
        maxRetriesPerRequest: 3,
      });
      const events = await createRedisEvents({
        redis,
        prefix: namespace,
        historySize: options.historySize,
        log: silentLog,
        onListenerError: options.onListenerError,
      });
      return {
        events,
        quotas: createRedisQuotas({ redis, prefix: namespace, windowMs: options.quotaWindowMs }),
        budgets: createRedisBudgets({ redis, prefix: namespace }),
        leases: createRedisLeases({ redis, prefix: namespace, leaseMs: 600 }),
        shared: true,
        async close() {
          await events.close();
          redis.disconnect();
        },
      };
    },
  },
];

const opened: Bus[] = [];
const namespaces = new Set<string>();
afterAll(async () => {
  for (const bus of opened.reverse()) await bus.close().catch(() => undefined);
  if (!REDIS_URL) return;
  // What the Redis half wrote, and nothing else on the server.
  const redis = await connectRedis(process.env.SPAR_TEST_REDIS_URL as string, {
    plugin: "tests",
    purpose: "tests",
    maxRetriesPerRequest: 3,
  });
  for (const namespace of namespaces) {
    const keys = await redis.keys(`${namespace}:*`);
    if (keys.length > 0) await redis.del(...keys);
  }
  redis.disconnect();
});

for (const factory of FACTORIES) {
  describe.skipIf(factory.skip)(
    `bus contract: ${factory.name}${factory.skip ? ` (skipped: ${factory.skip})` : ""}`,
    () => {
      const errors: unknown[] = [];
      /** Opens a bus in its own namespace, or in `namespace` to reach another's state. */
      async function open(namespace = `t${randomUUID().slice(0, 8)}`, historySize = 100) {
        const bus = await factory.open(
          { historySize, quotaWindowMs: 60_000, onListenerError: (err) => errors.push(err) },
          namespace,
        );
        opened.push(bus);
        namespaces.add(namespace);
        return { bus, namespace };
      }
      const status = (n: number) => ({
        kind: "fighter.status" as const,
        fighter_id: `f${n}`,
        status: "idle" as const,
      });

      describe("events", () => {
        it("delivers every event to every listener with increasing seqs, and delivered() follows them", async () => {
          const { bus } = await open();
          const seen: SparEvent[] = [];
          bus.events.subscribe((e) => seen.push(e));
          for (let i = 0; i < 20; i++) bus.events.publish(status(i));
          await bus.events.delivered();
          expect(seen.map((e) => (e.kind === "fighter.status" ? e.fighter_id : ""))).toEqual(
            Array.from({ length: 20 }, (_, i) => `f${i}`),
          );
          const seqs = seen.map((e) => e.seq);
          expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
          expect(new Set(seqs).size).toBe(20);
          expect(bus.events.lastSeq).toBe(seqs.at(-1));
          for (const e of seen) expect(e).toMatchObject({ id: expect.any(String), at: expect.any(String) });
        });

        it("resumes from a seq without the deltas, and keeps at most the history bound", async () => {
          const { bus } = await open(undefined, 5);
          const seen: SparEvent[] = [];
          bus.events.subscribe((e) => seen.push(e));
          bus.events.publish({ kind: "bout.started", fighter_id: "f", bout_id: "b" });
          bus.events.publish({ kind: "message.delta", fighter_id: "f", bout_id: "b", text: "hello" });
          for (let i = 0; i < 8; i++) bus.events.publish(status(i));
          await bus.events.delivered();
          const first = seen[0]?.seq ?? 0;
          const resumed = await bus.events.since(first);
          expect(resumed.map((e) => e.kind)).not.toContain("message.delta");
          expect(resumed).toHaveLength(5);
          expect(resumed.map((e) => e.seq)).toEqual(
            seen
              .filter((e) => e.kind === "fighter.status")
              .slice(-5)
              .map((e) => e.seq),
          );
          expect(await bus.events.since(bus.events.lastSeq)).toEqual([]);
        });

        it("keeps delivering when a listener throws, and stops a listener that unsubscribed", async () => {
          const { bus } = await open();
          const before = errors.length;
          const kinds: string[] = [];
          bus.events.subscribe(() => {
            throw new Error("bad listener");
          });
          const stop = bus.events.subscribe((e) => kinds.push(e.kind));
          bus.events.publish({ kind: "fighter.spawned", fighter_id: "f", name: "n" });
          await bus.events.delivered();
          stop();
          bus.events.publish({ kind: "fighter.killed", fighter_id: "f", name: "n" });
          await bus.events.delivered();
          expect(kinds).toEqual(["fighter.spawned"]);
          expect(errors.length - before).toBe(2);
        });

        it.skipIf(!factory.shared)(
          "shows two nodes one order of their events, and each resumes the other's",
          async () => {
            const { bus: one, namespace } = await open();
            const { bus: two } = await open(namespace);
            const seenOne: number[] = [];
            const seenTwo: number[] = [];
            const ids = (into: number[]) => (e: SparEvent) => {
              if (e.kind === "fighter.status") into.push(Number(e.fighter_id.slice(1)));
            };
            one.events.subscribe(ids(seenOne));
            two.events.subscribe(ids(seenTwo));
            for (let i = 0; i < 50; i++) (i % 2 ? two : one).events.publish(status(i));
            await Promise.all([one.events.delivered(), two.events.delivered()]);
            await expect.poll(() => seenOne.length).toBe(50);
            await expect.poll(() => seenTwo.length).toBe(50);
            expect(seenTwo).toEqual(seenOne);
            expect((await two.events.since(0)).length).toBe(50);
          },
        );
      });

      describe.skipIf(!factory.shared)("turn leases across nodes", () => {
        const fighter = () => randomUUID();

        it("lets one node at a time hold a fighter's lease, each grant with a higher fence", async () => {
          const { bus: one, namespace } = await open();
          const { bus: two } = await open(namespace);
          const f = fighter();
          let holders = 0;
          let most = 0;
          const fences: number[] = [];
          await Promise.all(
            Array.from({ length: 20 }, async (_, i) => {
              const lease = await (i % 2 ? two : one).leases.acquire(f, new AbortController().signal);
              holders += 1;
              most = Math.max(most, holders);
              fences.push(lease.fence);
              await new Promise((r) => setTimeout(r, 3));
              holders -= 1;
              await lease.release();
            }),
          );
          expect(most).toBe(1);
          expect(fences).toEqual([...fences].sort((a, b) => a - b));
          expect(new Set(fences).size).toBe(20);
          // Another fighter's lease is its own.
          const other = await one.leases.acquire(fighter(), new AbortController().signal);
          expect(other.fence).toBe(1);
          await other.release();
        });

        it("frees a dead node's lease by itself, and tells a holder whose lease was taken", async () => {
          const { bus: one, namespace } = await open();
          const { bus: two } = await open(namespace);
          const { bus: three } = await open(namespace);
          const f = fighter();
          const held = await one.leases.acquire(f, new AbortController().signal);
          // The node dies: no release, no more renewals.
          await one.close();
          const next = await two.leases.acquire(f, new AbortController().signal);
          expect(next.fence).toBeGreaterThan(held.fence);
          expect(held.lost.aborted).toBe(true);

          // A waiting acquire gives up with its signal's reason.
          const waiting = new AbortController();
          const refused = three.leases.acquire(f, waiting.signal);
          waiting.abort(new Error("caller left"));
          await expect(refused).rejects.toThrow("caller left");
          await next.release();
        });
      });

      describe("quota windows", () => {
        const fighter = () => randomUUID();

        it("admits exactly the quota of a burst, however many arrive at once", async () => {
          const { bus, namespace } = await open();
          const nodes = factory.shared ? [bus, (await open(namespace)).bus] : [bus];
          const f = fighter();
          const limits = { requests_per_minute: 60, tokens_per_minute: 1e9 };
          const all = await Promise.all(
            Array.from({ length: 1000 }, (_, i) =>
              (nodes[i % nodes.length] as Bus).quotas.admit(f, limits, 1),
            ),
          );
          expect(all.filter((a) => a.ok)).toHaveLength(60);
          const refused = all.filter((a) => !a.ok);
          expect(refused).toHaveLength(940);
          for (const a of refused) {
            expect(a).toMatchObject({ reason: "requests" });
            if (!a.ok) expect(a.retry_after_s).toBeGreaterThanOrEqual(1);
          }
          expect(await bus.quotas.freesInMs(f, limits)).toBeGreaterThan(0);
          expect(await bus.quotas.freesInMs(fighter(), limits)).toBe(0);
        });

        it("reserves a turn's estimate at admission, and admits one turn into an empty window however large", async () => {
          const { bus } = await open();
          const f = fighter();
          const tight: QuotaLimits = { requests_per_minute: 100, tokens_per_minute: 1000 };
          const burst = await Promise.all(Array.from({ length: 10 }, () => bus.quotas.admit(f, tight, 300)));
          expect(burst.filter((a) => a.ok)).toHaveLength(3);
          expect(await bus.quotas.admit(f, tight, 300)).toMatchObject({ ok: false, reason: "tokens" });
          expect((await bus.quotas.admit(f, tight, 100)).ok).toBe(true);
          const g = fighter();
          expect((await bus.quotas.admit(g, tight, 5000)).ok).toBe(true);
          expect(await bus.quotas.admit(g, tight, 1)).toMatchObject({ ok: false, reason: "tokens" });
        });

        it("settles a reservation once into the tokens really used", async () => {
          const { bus } = await open();
          const f = fighter();
          const q: QuotaLimits = { requests_per_minute: 100, tokens_per_minute: 1000 };
          const a = await bus.quotas.admit(f, q, 900);
          if (!a.ok) throw new Error("expected an admission");
          expect((await bus.quotas.admit(f, q, 900)).ok).toBe(false);
          await bus.quotas.settle(a.reservation, 100);
          await bus.quotas.settle(a.reservation, 100);
          // 100 used: 900 more fit, 901 would not.
          expect((await bus.quotas.admit(f, q, 900)).ok).toBe(true);
          expect((await bus.quotas.admit(f, q, 1)).ok).toBe(false);
        });

        it("lets a queued turn start only while settled usage leaves room, releasing a refused one", async () => {
          const { bus } = await open();
          const f = fighter();
          const q: QuotaLimits = { requests_per_minute: 100, tokens_per_minute: 1000 };
          const first = await bus.quotas.admit(f, q, 300);
          const second = await bus.quotas.admit(f, q, 300);
          if (!first.ok || !second.ok) throw new Error("expected admissions");
          expect((await bus.quotas.start(first.reservation, q)).ok).toBe(true);
          await bus.quotas.settle(first.reservation, 900);
          expect(await bus.quotas.start(second.reservation, q)).toMatchObject({
            ok: false,
            reason: "tokens",
          });
          // The refused turn's 300 no longer count: 900 settled + 100 fits.
          expect((await bus.quotas.admit(f, q, 100)).ok).toBe(true);
        });
      });

      describe("budget counters", () => {
        const day = () => Date.now() + 86_400_000;
        const line = (key: string, limit: number, amount: number, seed?: number) => ({
          key,
          limit,
          amount,
          expires_at: day(),
          ...(seed === undefined ? {} : { seed }),
        });

        it("reports a missing counter, and seeds it once (a second seed is ignored)", async () => {
          const { bus } = await open();
          expect(await bus.budgets.reserve("c1", [line("g:daily", 100, 10)])).toEqual({
            ok: false,
            missing: ["g:daily"],
          });
          expect(await bus.budgets.reserve("c1", [line("g:daily", 100, 10, 40)])).toEqual({ ok: true });
          expect(await bus.budgets.reserve("c2", [line("g:daily", 100, 10, 0)])).toEqual({ ok: true });
          expect(await bus.budgets.read(["g:daily", "nope"])).toEqual([{ spent: 40, reserved: 20 }, null]);
        });

        it("reserves on every line or on none, and says which line had no room", async () => {
          const { bus } = await open();
          await bus.budgets.reserve("s", [line("x", 100, 0, 0)]);
          const refused = await bus.budgets.reserve("a", [line("x", 100, 30, 0), line("y", 50, 30, 50)]);
          expect(refused).toEqual({ ok: false, index: 1, spent: 50, reserved: 0 });
          // Nothing was held on x for the refused call.
          expect(await bus.budgets.read(["x"])).toEqual([{ spent: 0, reserved: 0 }]);
        });

        it("admits calls while spent and reserved stay under the limit, exactly under a concurrent burst", async () => {
          const { bus: a, namespace } = await open();
          const nodes = factory.shared ? [a, (await open(namespace)).bus] : [a];
          await a.budgets.reserve("seed", [line("f:daily", 1000, 0, 0)]);
          await a.budgets.release("seed", ["f:daily"]);
          const burst = await Promise.all(
            Array.from({ length: 50 }, (_, i) =>
              (nodes[i % nodes.length] as Bus).budgets.reserve(`c${i}`, [line("f:daily", 1000, 300)]),
            ),
          );
          // 0, 300, 600 and 900 are under 1000: four calls, whose worst cases pass it by 200.
          expect(burst.filter((v) => v.ok)).toHaveLength(4);
          expect(await a.budgets.read(["f:daily"])).toEqual([{ spent: 0, reserved: 1200 }]);
        });

        it("settles a call into what it cost, releases a failed one, and tells a warning's crossing once", async () => {
          const { bus } = await open();
          await bus.budgets.reserve("a", [line("w", 1000, 500, 0), line("v", 10, 5, 0)]);
          await bus.budgets.reserve("b", [line("w", 1000, 500)]);
          expect(await bus.budgets.settle("a", ["w", "v"], [700, 1], [800, 0])).toEqual([]);
          expect(await bus.budgets.settle("b", ["w"], [200], [800])).toEqual([0]);
          expect(await bus.budgets.read(["w", "v"])).toEqual([
            { spent: 900, reserved: 0 },
            { spent: 1, reserved: 0 },
          ]);
          await bus.budgets.reserve("c", [line("w", 1000, 50)]);
          await bus.budgets.release("c", ["w"]);
          expect(await bus.budgets.settle("d", ["w"], [200], [800])).toEqual([]);
          expect(await bus.budgets.read(["w"])).toEqual([{ spent: 1100, reserved: 0 }]);
          expect(await bus.budgets.reserve("e", [line("w", 1000, 1)])).toMatchObject({ ok: false, index: 0 });
          // An approved overrun is counted, never refused.
          expect(await bus.budgets.reserve("e", [{ ...line("w", 1000, 1), force: true }])).toEqual({
            ok: true,
          });
        });
      });
    },
  );
}
