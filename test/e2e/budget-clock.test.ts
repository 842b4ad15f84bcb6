/**
 * A gorilla caged by its budget and unleashed when the period turns, end to end on a test clock
 * (issue 31 item 2): the real daemon from dist runs under libfaketime (Debian's `faketime`
 * package; its multi-threaded build, as Node runs threads), whose offset is read from a file (`FAKETIME_TIMESTAMP_FILE`, re-read on every call with
 * `FAKETIME_NO_CACHE=1`). Node's wall clock and its timers' monotonic clock both follow it, so
 * moving the file's offset to the next day turns the budget's period at once: no sleeps. The gorilla's
 * `[budget] daily_tokens` is passed by its first cycle; the next is refused, and the gorilla is
 * caged with the reason (API, `spar gorilla show`) and `budget.exceeded` is published; the clock
 * turns the day, and it is unleashed by itself and its cycles resume. Outside CI it is skipped,
 * saying so, where libfaketime is not installed; under CI it fails (`.ci/run` installs it).
 */
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import type { GorillaRunRecord } from "../../lib/gorillas/records.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import { underCi } from "../helpers/ci.js";
import {
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";
import { gorillaToml, writeGorilla } from "../helpers/gorillas.js";

const LIBFAKETIME = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib"]
  .map((dir) => join(dir, "faketime", "libfaketimeMT.so.1"))
  .find((path) => existsSync(path));
if (!LIBFAKETIME && underCi()) {
  throw new Error(
    "CI is set but libfaketime is not installed (apt-get install faketime): under CI this suite fails rather than skip",
  );
}

interface View {
  state: string;
  caged_reason?: string;
  caged_until?: string;
}

describe.skipIf(!LIBFAKETIME)(
  `a gorilla caged by its budget, unleashed when the period turns, on a test clock${LIBFAKETIME ? "" : " (skipped: libfaketime is not installed; apt-get install faketime)"}`,
  () => {
    let fake: FakeOpenAI;
    let home: string;
    let daemon: TestDaemon;
    let clock: string;
    const events: { kind: string; [key: string]: unknown }[] = [];
    let ws: WebSocket | undefined;

    const view = async () => (await daemon.request<View>("GET", "/api/v1/gorillas/spender")).body;
    /** The cycles that ran to an end (a fire that found the last cycle still running is skipped). */
    const runs = async () =>
      (
        await daemon.request<{ runs: GorillaRunRecord[] }>("GET", "/api/v1/gorillas/spender/runs?limit=100")
      ).body.runs.filter((r) => r.outcome !== "running" && r.outcome !== "skipped");
    const calls = () => fake.calls().filter((c) => c.last_user_text.startsWith("[gorilla spender:"));
    /**
     * Sets the daemon's clock (an ISO time); it runs on from there. An offset from the real clock,
     * moved forward only: an absolute `@time` restarts libfaketime's clocks, and Node aborts when
     * its monotonic clock goes back.
     */
    const setClock = (at: string) =>
      writeFileSync(clock, `+${Math.round((Date.parse(at) - Date.now()) / 1000)}\n`);

    beforeAll(async () => {
      fake = await startFakeOpenAI();
      // Every cycle is one model call of 1,500 tokens: more than the whole daily budget.
      fake.setDefault(() => ({ text: "done", usage: { prompt_tokens: 1000, completion_tokens: 500 } }));
      home = tempHome();
      const port = await freePort();
      clock = join(home, "faketime");
      setClock("2030-06-14T23:58:00Z");
      writeConfig(
        home,
        port,
        fake.url,
        '\n[creed]\nreflect = false\n\n[gorillas]\ntimezone = "UTC"\n\n[budgets]\ntime_zone = "UTC"\n',
      );
      writeGorilla(
        home,
        "spender",
        `${gorillaToml("spender", "every 2s", 'catch_up = "skip"\ntimeout_s = 60')}\n[budget]\ndaily_tokens = 1000\n`,
      );
      daemon = await startDaemon(home, port, {
        LD_PRELOAD: LIBFAKETIME,
        FAKETIME_TIMESTAMP_FILE: clock,
        FAKETIME_NO_CACHE: "1",
      });
      ws = new WebSocket(`ws://127.0.0.1:${port}/api/v1/ws`);
      ws.on("message", (data) => {
        const frame = JSON.parse(data.toString()) as { type: string; kind: string };
        if (frame.type === "event") events.push(frame);
      });
      await new Promise<void>((done, fail) => {
        ws?.once("open", () => done());
        ws?.once("error", fail);
      });
      ws.send(
        JSON.stringify({
          type: "subscribe",
          kinds: ["budget.exceeded", "gorilla.caged", "gorilla.unleashed"],
        }),
      );
    }, 60_000);

    afterAll(async () => {
      ws?.close();
      await daemon?.stop();
      await fake?.close();
      removeHome(home);
    });

    it("cages the gorilla with the reason when a cycle passes its daily budget", async () => {
      const unleashed = await daemon.cli(["gorilla", "unleash", "spender"]);
      expect(unleashed.code, unleashed.stderr).toBe(0);
      // The daemon runs on the test clock: its next fire is in 2030.
      expect(
        (await daemon.request<{ next_run_at: string }>("GET", "/api/v1/gorillas/spender")).body.next_run_at,
      ).toMatch(/^2030-06-14T23:5/);
      await expect.poll(async () => (await view()).caged_reason, { timeout: 20_000 }).toBeDefined();
      const caged = await view();
      expect(caged).toMatchObject({
        state: "CAGED",
        caged_reason: expect.stringMatching(
          /gorilla:spender:daily_tokens is used up: 1500 tokens of 1000 tokens/,
        ),
        caged_until: "2030-06-15T00:00:00.000Z",
      });
      const done = await runs();
      expect(done.map((r) => r.outcome)).toEqual(["failed", "ok"]);
      expect(done[0]?.error).toMatch(/gorilla:spender:daily_tokens is used up/);
      // The refused cycle never reached the model.
      expect(calls()).toHaveLength(1);
      const shown = await daemon.cli(["gorilla", "status", "spender"]);
      expect(shown.code, shown.stderr).toBe(0);
      expect(shown.stdout).toMatch(
        /caged\s+by a budget until 2030-06-15T00:00:00\.000Z: .*gorilla:spender:daily_tokens is used up/,
      );
      await expect
        .poll(() => events.find((e) => e.kind === "budget.exceeded"))
        .toMatchObject({
          kind: "budget.exceeded",
          budget: "gorilla:spender:daily_tokens",
          limit: 1000,
          spent: 1500,
          unit: "tokens",
          resets_at: "2030-06-15T00:00:00.000Z",
          action: "stopped",
        });
    });

    it("unleashes it by itself when the day turns, and its cycles resume", async () => {
      const before = (await runs()).length;
      setClock("2030-06-15T00:00:05Z");
      await expect.poll(async () => (await view()).state, { timeout: 10_000 }).not.toBe("CAGED");
      expect((await view()).caged_reason).toBeUndefined();
      await expect
        .poll(
          async () => (await runs()).slice(0, (await runs()).length - before).some((r) => r.outcome === "ok"),
          {
            timeout: 10_000,
          },
        )
        .toBe(true);
      expect(calls().length).toBeGreaterThanOrEqual(2);
      expect(events.some((e) => e.kind === "gorilla.unleashed")).toBe(true);
    });
  },
);
