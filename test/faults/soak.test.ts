/**
 * Soak: mixed traffic for a long while, watching the daemon for slow leaks. Clients send messages
 * over several fighters (some scripted into a `memory_store` tool call, a new bout every 20), two
 * WebSocket clients stay subscribed to every event while a third connects, subscribes and leaves
 * over and over, and a one-second gorilla cycles. Every few seconds the daemon's RSS
 * (/proc/<pid>/status VmRSS), its live JavaScript heap, its open file descriptors (/proc/<pid>/fd)
 * and the round trip of GET /api/v1/health are sampled. The daemon exposes no event-loop delay, so
 * that round trip is the proxy for it: a blocked loop answers late.
 *
 * The live heap is what a leak in JavaScript grows: the daemon runs with its inspector on a free
 * loopback port (`--inspect=127.0.0.1:0`, nothing else changed), and each sample asks it for a full
 * garbage collection and then the heap's used size. RSS alone cannot tell a leak from V8 sizing its
 * heap: Node 24's young generation grows to 128 MiB over the first half-minute of steady traffic
 * (Node 20's to 32 MiB), which in a 20 s run lands between the second quarter and the last.
 *
 * Flat means, after the first quarter (warm-up): the mean live heap of the last quarter within +25 %
 * of the second quarter's, and so the mean RSS outside the JavaScript heap (RSS minus the heap's
 * committed size: native memory, SQLite's caches, buffers); the mean fd count within +10 and its
 * peak within +10 of the second quarter's; and the health round trip's p99 under 5 s (a loop that
 * never stalls for long; the figure is printed). In the hour-long run the young generation has
 * long reached its size by the second quarter, so there the whole RSS must also stay within +25 %.
 *
 * Length: `npm run test:soak` (SPAR_FAULTS=soak, set by test/faults/vitest.soak.config.ts) runs
 * SPAR_SOAK_MINUTES minutes, 60 by default; elsewhere (npm test, npm run test:faults) 20 seconds,
 * or SPAR_SOAK_MINUTES when set.
 */
import { randomUUID } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { connectInspector } from "../../bench/suite/inspector.mjs";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";
import { gorillaToml, writeGorilla } from "../helpers/gorillas.js";
import { between, call, figure, pool, sleep, toolOrEcho } from "./lib.js";

const SOAK = process.env.SPAR_FAULTS === "soak";
const MINUTES = Number(process.env.SPAR_SOAK_MINUTES ?? (SOAK ? 60 : 20 / 60));
const DURATION_MS = Math.round(MINUTES * 60_000);
/** About 40 samples in a short run, one every 10 s in a long one. */
const SAMPLE_MS = Math.min(10_000, Math.max(500, Math.round(DURATION_MS / 40)));
const FIGHTERS = ["soak-a", "soak-b", "soak-c"];
const CLIENTS = 4;

interface Sample {
  rssKiB: number;
  /** The JavaScript heap after a full collection: used, and committed (both KiB). */
  heapKiB: number;
  heapCommittedKiB: number;
  fds: number;
  healthMs: number;
}

type Inspector = Awaited<ReturnType<typeof connectInspector>>;

function gorilla(home: string): void {
  writeGorilla(home, "tick", gorillaToml("tick", "every 1s", 'catch_up = "skip"\ntimeout_s = 30'));
}

/** Opens a WebSocket subscribed to every event; counts the events it gets. */
async function subscriber(url: string, counter: { events: number }): Promise<WebSocket> {
  const ws = new WebSocket(url);
  await new Promise<void>((done, fail) => {
    ws.once("open", () => done());
    ws.once("error", fail);
  });
  ws.on("message", (data: Buffer) => {
    if ((JSON.parse(data.toString()) as { type: string }).type === "event") counter.events++;
  });
  ws.send(JSON.stringify({ type: "subscribe" }));
  return ws;
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
const p99 = (xs: number[]) =>
  [...xs].sort((a, b) => a - b)[Math.max(0, Math.ceil(xs.length * 0.99) - 1)] ?? 0;

async function sample(pid: number, probe: Inspector, healthMs: number): Promise<Sample> {
  const heap = await probe.heap();
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const rssKiB = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? 0);
  return {
    rssKiB,
    heapKiB: heap.usedSize / 1024,
    heapCommittedKiB: heap.totalSize / 1024,
    fds: readdirSync(`/proc/${pid}/fd`).length,
    healthMs,
  };
}

describe("soak: mixed traffic, flat memory, fds and latency", () => {
  let fake: FakeOpenAI;
  let home: string;
  let daemon: TestDaemon;
  let probe: Inspector;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    fake.setDefault(toolOrEcho(20));
    home = tempHome();
    const port = await freePort();
    writeConfig(
      home,
      port,
      fake.url,
      '\n[creed]\nreflect = false\n\n[api]\nrate_limit_per_minute = 1000000\n[gorillas]\ntimezone = "UTC"\n',
    );
    gorilla(home);
    daemon = await startDaemon(home, port, { NODE_OPTIONS: "--inspect=127.0.0.1:0" });
    probe = await connectInspector(daemon.output());
    for (const name of FIGHTERS) {
      const made = await daemon.request("POST", "/api/v1/fighters", {
        manifest: {
          name,
          description: name,
          system_prompt: `You are ${name}.`,
          quota: { requests_per_minute: 1_000_000, tokens_per_minute: 1_000_000_000 },
        },
      });
      expect(made.status, JSON.stringify(made.body)).toBe(201);
    }
    expect((await daemon.request("POST", "/api/v1/gorillas/tick/unleash")).status).toBe(200);
  }, 60_000);

  afterAll(async () => {
    probe?.close();
    await daemon?.stop();
    await fake?.close();
    if (home) removeHome(home);
  });

  it(
    `stays flat for ${MINUTES < 1 ? `${Math.round(MINUTES * 60)} s` : `${MINUTES} minutes`}`,
    async (ctx) => {
      if (process.platform !== "linux") {
        console.log("soak: skipped, it reads /proc and runs on Linux only");
        ctx.skip();
        return;
      }
      const pid = daemon.process.pid as number;
      const wsUrl = `${daemon.url.replace("http", "ws")}/api/v1/ws`;
      const counter = { events: 0 };
      const subscribers = [await subscriber(wsUrl, counter), await subscriber(wsUrl, counter)];
      const deadline = Date.now() + DURATION_MS;
      let messages = 0;
      let churned = 0;
      const failures: string[] = [];
      const samples: Sample[] = [];

      const clients = pool(
        Array.from({ length: CLIENTS }, (_, i) => i),
        CLIENTS,
        async (client) => {
          for (let n = 0; Date.now() < deadline; n++) {
            const fighter = FIGHTERS[(client + n) % FIGHTERS.length] as string;
            const message = `${n % 5 === 0 ? "[tool] " : ""}soak ${client}/${n}`;
            const body = n % 20 === 0 ? { message, bout: "new" } : { message };
            const res = await call(`${daemon.url}/api/v1/fighters/${fighter}/message`, "POST", body, {
              "idempotency-key": randomUUID(),
            });
            if (res.status === 200) messages++;
            else
              failures.push(`${fighter} ${message}: ${res.status} ${JSON.stringify(res.body) ?? res.error}`);
            if (failures.length > 0) return;
            await sleep(between(5, 30));
          }
        },
      );
      const churn = (async () => {
        while (Date.now() < deadline && failures.length === 0) {
          const ws = await subscriber(wsUrl, counter);
          await sleep(between(200, 800));
          ws.close();
          churned++;
          await sleep(between(100, 400));
        }
      })();
      const sampler = (async () => {
        while (Date.now() < deadline && failures.length === 0) {
          const started = performance.now();
          const health = await call(`${daemon.url}/api/v1/health`, "GET");
          const healthMs = performance.now() - started;
          if (health.status !== 200) failures.push(`health answered ${health.status}`);
          samples.push(await sample(pid, probe, healthMs));
          await sleep(SAMPLE_MS);
        }
      })();
      await Promise.all([clients, churn, sampler]);
      for (const ws of subscribers) ws.close();
      expect(failures).toEqual([]);
      expect(daemon.process.exitCode).toBeNull();

      const runs = await daemon.request<{ runs: unknown[] }>("GET", "/api/v1/gorillas/tick/runs?limit=500");
      const quarter = Math.floor(samples.length / 4);
      const second = samples.slice(quarter, 2 * quarter);
      const last = samples.slice(samples.length - quarter);
      const quarters = (of: (s: Sample) => number) => ({
        second: mean(second.map(of)),
        last: mean(last.map(of)),
      });
      const rss = quarters((s) => s.rssKiB);
      const heap = quarters((s) => s.heapKiB);
      const native = quarters((s) => s.rssKiB - s.heapCommittedKiB);
      const fds = {
        second: mean(second.map((s) => s.fds)),
        last: mean(last.map((s) => s.fds)),
        secondPeak: Math.max(...second.map((s) => s.fds)),
        lastPeak: Math.max(...last.map((s) => s.fds)),
      };
      const healthP99 = p99(samples.map((s) => s.healthMs));
      const flat =
        heap.last <= heap.second * 1.25 &&
        native.last <= native.second * 1.25 &&
        (!SOAK || rss.last <= rss.second * 1.25) &&
        fds.last <= fds.second + 10 &&
        fds.lastPeak <= fds.secondPeak + 10 &&
        healthP99 < 5000;
      const mib = (kib: number) => (kib / 1024).toFixed(0);
      const minutes = MINUTES < 1 ? MINUTES.toFixed(2) : String(MINUTES);
      figure(
        `soak: ${minutes} minutes, ${messages} messages, RSS ${mib(rss.second)}→${mib(rss.last)} MiB ` +
          `(live heap ${mib(heap.second)}→${mib(heap.last)}, outside the heap ${mib(native.second)}→${mib(native.last)}), fds ${fds.second.toFixed(0)}→${fds.last.toFixed(0)}, ` +
          `health p99 ${healthP99.toFixed(0)} ms: ${flat ? "flat" : "NOT flat"} ` +
          `(${samples.length} samples, ${counter.events} WebSocket events, ${churned} subscribers came and went, ` +
          `${runs.body.runs.length}${runs.body.runs.length === 500 ? "+" : ""} gorilla runs; second quarter → last quarter)`,
      );
      expect(samples.length).toBeGreaterThanOrEqual(8);
      expect(messages).toBeGreaterThan(0);
      expect(counter.events).toBeGreaterThan(0);
      expect(runs.body.runs.length).toBeGreaterThan(0);
      expect({ rss, heap, native, fds, healthP99, flat }).toEqual({
        rss,
        heap,
        native,
        fds,
        healthP99,
        flat: true,
      });
    },
    DURATION_MS + 120_000,
  );
});
