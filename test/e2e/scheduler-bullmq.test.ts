import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import type { GorillaRunRecord } from "../../lib/gorillas/records.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import { serviceUrl } from "../helpers/ci.js";
import {
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";
import { gorillaToml, writeGorilla } from "../helpers/gorillas.js";

const REDIS_URL = serviceUrl("SPAR_TEST_REDIS_URL");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `probe` until it returns something truthy; fails with `what` after `withinMs`. */
async function until<T>(
  what: string,
  probe: () => Promise<T | undefined | false>,
  withinMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline) {
    const value = await probe();
    if (value) return value;
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${what}`);
}

type Run = GorillaRunRecord;

/** The fire times the daemon's cycles answered (`scheduled_at` of gorilla.rampage.started). */
async function watchFires(port: number) {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/api/v1/ws`);
  const fires: string[] = [];
  ws.on("message", (data) => {
    const frame = JSON.parse(data.toString()) as { type: string; kind: string; scheduled_at?: string };
    if (frame.type === "event" && frame.kind === "gorilla.rampage.started" && frame.scheduled_at) {
      fires.push(frame.scheduled_at);
    }
  });
  await new Promise<void>((done, fail) => {
    ws.once("open", () => done());
    ws.once("error", fail);
  });
  ws.send(JSON.stringify({ type: "subscribe", kinds: ["gorilla.rampage.started"] }));
  await sleep(200);
  return { fires, close: () => ws.close() };
}

describe.skipIf(!REDIS_URL)(
  `gorillas on scheduler-bullmq${REDIS_URL ? "" : " (skipped: SPAR_TEST_REDIS_URL is unset)"}`,
  () => {
    const prefix = `spar-e2e-${process.pid}-${Date.now().toString(36)}`;
    const env = { SPAR_REDIS_URL: REDIS_URL as string };
    let fake: FakeOpenAI;
    let home: string;
    let port: number;
    let daemon: TestDaemon;

    const runs = async (name: string, limit = 200) =>
      (await daemon.request<{ runs: Run[] }>("GET", `/api/v1/gorillas/${name}/runs?limit=${limit}`)).body
        .runs;
    const state = async (name: string) =>
      (await daemon.request<{ state: string }>("GET", `/api/v1/gorillas/${name}`)).body.state;

    beforeAll(async () => {
      fake = await startFakeOpenAI();
      home = tempHome();
      port = await freePort();
      writeConfig(
        home,
        port,
        fake.url,
        '\n[plugins]\nscheduler = "scheduler-bullmq"\n\n' +
          `[redis]\nprefix = "${prefix}"\n\n` +
          "[creed]\nreflect = false\n\n[quotas]\nrequests_per_minute = 100000\ntokens_per_minute = 100000000\n\n" +
          '[gorillas]\ntimezone = "UTC"\n',
      );
      writeGorilla(home, "tick", gorillaToml("tick", "every 1s", "timeout_s = 120"));
    });

    afterAll(async () => {
      await daemon?.stop();
      await fake?.close();
      removeHome(home);
      const redis = new Redis(REDIS_URL as string);
      const keys = await redis.keys(`${prefix}:*`);
      if (keys.length > 0) await redis.del(...keys);
      await redis.quit();
    });

    it("refuses to start without the Redis URL, or with Redis unreachable, never showing the password", async () => {
      const missing = await startDaemon(home, port, { SPAR_REDIS_URL: "" }).then(
        () => "started",
        (err: Error) => err.message,
      );
      expect(missing).toContain("CONFIG_INVALID");
      expect(missing).toContain("SPAR_REDIS_URL");
      const unreachable = await startDaemon(home, port, {
        SPAR_REDIS_URL: "redis://spar:hunter2-secret@127.0.0.1:1/0",
      }).then(
        () => "started",
        (err: Error) => err.message,
      );
      expect(unreachable).toContain("PLUGIN_FAILED");
      expect(unreachable).toContain("cannot reach Redis at redis://***:***@127.0.0.1:1/0");
      expect(unreachable).not.toContain("hunter2-secret");
    });

    it("unleashed from the CLI, runs a cycle on every fire, each fire once; caged, fires no more", async () => {
      daemon = await startDaemon(home, port, env);
      const watch = await watchFires(port);
      const unleashed = await daemon.cli(["gorilla", "unleash", "tick"]);
      expect(unleashed.code, unleashed.stderr).toBe(0);
      expect(unleashed.stdout).toMatch(/^tick is UNLEASHED; next run \d{4}-\d\d-\d\dT/);

      const ok = await until("three completed cycles", async () => {
        const done = (await runs("tick")).filter((r) => r.outcome === "ok" && r.trigger === "schedule");
        return done.length >= 3 && done;
      });
      expect(ok[0]?.output).toMatch(/^echo: \[gorilla tick: cycle /);
      expect(new Set(ok.map((r) => r.bout_id)).size).toBe(ok.length);

      const caged = await daemon.cli(["gorilla", "cage", "tick"]);
      expect(caged.code, caged.stderr).toBe(0);
      expect(await state("tick")).toBe("CAGED");
      const again = await daemon.request<{ error: { code: string } }>("POST", "/api/v1/gorillas/tick/cage");
      expect(again.status).toBe(409);
      expect(again.body.error.code).toBe("CONFLICT");
      const count = (await runs("tick")).length;
      await sleep(2500);
      expect((await runs("tick")).length).toBe(count);
      watch.close();
      // Each fire answered by one cycle: no fire time twice.
      expect(watch.fires.length).toBeGreaterThanOrEqual(3);
      expect(new Set(watch.fires).size).toBe(watch.fires.length);
    });

    it("keeps the desired state across a restart, caged and unleashed", async () => {
      await daemon.stop();
      daemon = await startDaemon(home, port, env);
      expect(await state("tick")).toBe("CAGED");
      const count = (await runs("tick")).length;
      await sleep(2500);
      expect((await runs("tick")).length).toBe(count);

      expect((await daemon.cli(["gorilla", "unleash", "tick"])).code).toBe(0);
      await daemon.stop();
      const stoppedAt = new Date().toISOString();
      daemon = await startDaemon(home, port, env);
      expect(["UNLEASHED", "RAMPAGING"]).toContain(await state("tick"));
      await until("a scheduled cycle after the restart", async () =>
        (await runs("tick")).some(
          (r) => r.started_at > stoppedAt && r.outcome === "ok" && r.trigger === "schedule",
        ),
      );
    });

    it("records failed the run of a daemon killed mid-cycle, and the fires resume, each once", async () => {
      const before = fake.requests.length;
      fake.enqueue({ delay_ms: 60_000, text: "never seen" });
      await until("the slow request to reach the model", async () => fake.requests.length > before);
      const interrupted = await until("the interrupted run", async () =>
        (await runs("tick")).find((r) => r.outcome === "running"),
      );
      daemon.process.kill("SIGKILL");
      await daemon.stop();

      daemon = await startDaemon(home, port, env);
      const watch = await watchFires(port);
      const failed = await until(
        "the interrupted run to be recorded failed",
        async () => {
          const run = (await runs("tick")).find((r) => r.id === interrupted.id);
          return run?.outcome === "failed" && run;
        },
        60_000,
      );
      expect(failed.error).toContain("stopped before it ended");
      const recoveredAt = new Date().toISOString();
      await until("two scheduled cycles after the recovery", async () => {
        const fresh = (await runs("tick")).filter(
          (r) => r.started_at > recoveredAt && r.outcome === "ok" && r.trigger === "schedule",
        );
        return fresh.length >= 2;
      });
      // BullMQ hands the killed daemon's fire job out again once it finds it stalled: it is let go.
      await until(
        "the stalled fire to be let go",
        async () => daemon.output().includes("is not run again"),
        100_000,
      );
      watch.close();
      // Each fire once: neither the killed daemon's fire nor BullMQ's stalled job runs a second time.
      const skippedAt = (await runs("tick"))
        .filter((r) => r.outcome === "skipped" && r.started_at > interrupted.started_at)
        .map((r) => r.started_at);
      const fires = [...watch.fires, ...skippedAt];
      expect(new Set(fires).size).toBe(fires.length);
      expect((await runs("tick")).filter((r) => r.outcome === "running").length).toBeLessThanOrEqual(1);
    }, 180_000);
  },
);
