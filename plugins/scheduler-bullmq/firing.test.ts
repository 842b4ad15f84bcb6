/**
 * Two BullMQ firings on one Redis, as two nodes would have them (each its own Queue, Worker and
 * connections), sharing one real store: a gorilla on `every 1s` fires for about ten seconds and
 * every fire is taken by exactly one of them, none missed; a cycle running on one node is aborted by
 * a cage on the other, and no fire follows. Needs Redis: SPAR_TEST_REDIS_URL (skipped without it).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Logger, Store } from "../../sdk/index.js";
import type { Firing, FiringHost, GorillaDesired, GorillaRecords } from "../../sdk/kits/gorillas.js";
import { type LoadedGorilla, parseGorilla } from "../../sdk/kits/gorillas.js";
import { serviceUrl } from "../../test/helpers/ci.js";
import { gorillaRecordsOver } from "../../test/helpers/gorilla-records.js";
import { openSqliteStore } from "../store-sqlite/store.js";
import { createBullmqFiring } from "./firing.js";

const URL = serviceUrl("SPAR_TEST_REDIS_URL");
const QUIET: Logger = { info: () => undefined, warn: () => undefined, error: () => undefined };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function gorilla(name: string, schedule: string): LoadedGorilla {
  const toml = [
    `name = "${name}"`,
    `description = "The ${name} test gorilla."`,
    `schedule = "${schedule}"`,
    "moves = []",
    `system_prompt = "You are ${name}."`,
    `task = "Say done."`,
  ].join("\n");
  return {
    ...parseGorilla(toml, `${name}/GORILLA.toml`, { moves: new Map(), timezone: "UTC" }),
    source: "user",
    dir: name,
  };
}

/** What one node saw: the fires it took, and the desired states other nodes told it. */
interface Node {
  firing: Firing;
  fires: { name: string; at: number }[];
  changes: { name: string; desired: GorillaDesired }[];
}

describe.skipIf(!URL)(
  `scheduler-bullmq firing across two nodes on one Redis${URL ? "" : " (skipped: SPAR_TEST_REDIS_URL is unset)"}`,
  () => {
    const prefix = `spar-test-${process.pid}-${Date.now().toString(36)}`;
    const gorillas = new Map<string, LoadedGorilla>();
    let home: string;
    let store: Store;
    let records: GorillaRecords;
    const nodes: Node[] = [];

    /** A node whose fires run `onFire` (recording them first). */
    /** A node on `namespace`: each test has its own, so no earlier test's workers take its fires. */
    async function startNode(
      onFire: (node: Node, name: string, at: Date) => Promise<void>,
      namespace = prefix,
    ): Promise<Node> {
      const node: Node = {
        firing: createBullmqFiring({ url: URL as string, prefix: namespace, log: QUIET }),
        fires: [],
        changes: [],
      };
      const host: FiringHost = {
        async fire(name, at) {
          node.fires.push({ name, at: at.getTime() });
          await onFire(node, name, at);
        },
        changed(name, desired) {
          node.changes.push({ name, desired });
        },
        gorilla: (name) => gorillas.get(name),
        records,
      };
      await node.firing.start(host);
      nodes.push(node);
      return node;
    }

    beforeAll(async () => {
      home = mkdtempSync(join(tmpdir(), "spar-bullmq-"));
      store = await openSqliteStore({ home, masterSecret: Buffer.from("correct horse battery staple") });
      records = gorillaRecordsOver(store, "scheduler-bullmq");
    });

    afterAll(async () => {
      await Promise.all(nodes.map((n) => n.firing.stop()));
      const redis = new Redis(URL as string);
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length > 0) await redis.del(...keys);
      await redis.quit();
      await store.close();
      rmSync(home, { recursive: true, force: true });
    });

    it("takes each fire of an every-1s gorilla on exactly one node, none missed", async () => {
      const ticker = gorilla("ticker", "every 1s");
      gorillas.set(ticker.name, ticker);
      const a = await startNode(async () => undefined);
      const b = await startNode(async () => undefined);
      // Both nodes arm it, as both would at start: one schedule, not two.
      await a.firing.arm(ticker, { restart: false });
      await b.firing.arm(ticker, { restart: true });
      await sleep(10_500);
      await a.firing.disarm(ticker);
      await sleep(1_500);

      const times = [...a.fires, ...b.fires].filter((f) => f.name === "ticker").map((f) => f.at);
      const sorted = [...times].sort((x, y) => x - y);
      // Exactly once each: no fire time taken twice, by one node or by both.
      expect(new Set(times).size).toBe(times.length);
      // None missed: whole seconds, one after another, from the first to the last.
      expect(sorted.length).toBeGreaterThanOrEqual(8);
      for (const [i, at] of sorted.entries()) {
        expect(at % 1000).toBe(0);
        if (i > 0) expect(at - (sorted[i - 1] as number)).toBe(1000);
      }
    });

    it("aborts a cycle running on one node when the other cages the gorilla, and fires no more", async () => {
      const slow = gorilla("slow", "every 1s");
      gorillas.set(slow.name, slow);
      let runId: string | undefined;
      let ranOn: Node | undefined;
      // Whichever node takes the fire runs the cycle as the runtime does: holds the slot, records
      // a run, and waits to be caged.
      const cycle = async (node: Node, name: string) => {
        const slot = await node.firing.claim?.(name);
        if (!slot || "busy" in slot) return;
        const run = await records.runs.begin({ gorilla: name, trigger: "schedule" });
        runId = run.id;
        ranOn = node;
        slot.bind(run.id);
        while (!node.changes.some((c) => c.name === name && c.desired === "caged")) await sleep(50);
        await records.runs.finish(run.id, {
          outcome: "aborted",
          usage: { input_tokens: 0, output_tokens: 0 },
          error: "the gorilla's cycle was caged",
        });
        await slot.release();
      };
      const a = await startNode(cycle, `${prefix}-cage`);
      const b = await startNode(cycle, `${prefix}-cage`);
      await a.firing.arm(slow, { restart: false });
      await expect.poll(() => runId, { timeout: 10_000 }).toBeDefined();
      const other = ranOn === a ? b : a;

      // The other node cages: the scheduler goes, the running node is told, and the cage answers
      // with its run once it ended.
      await other.firing.disarm(slow);
      const elsewhere = await other.firing.announce?.("slow", "caged");
      expect(elsewhere?.run_id).toBe(runId);
      await elsewhere?.ended;
      expect(ranOn?.changes).toContainEqual({ name: "slow", desired: "caged" });
      expect((await records.runs.get(runId as string))?.outcome).toBe("aborted");

      const caged = Date.now();
      await sleep(3_000);
      const later = [...a.fires, ...b.fires].filter((f) => f.name === "slow" && f.at > caged);
      expect(later).toEqual([]);
    });
  },
);
