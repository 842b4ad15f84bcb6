/**
 * Prometheus metrics end to end (issue 34 item 3; README "Metrics and traces"): the real daemon with
 * `[metrics] enabled` and a listener of its own, a scripted conversation against the fake model (a
 * turn with a tool call, a turn the model fails, a call the fighter holds no grant for), then the
 * text format fetched from the metrics listener and from the API, checked for exact counts and by
 * Prometheus's own `promtool check metrics`. A scheduled gorilla run and a Telegram reply are
 * counted too.
 */
import { spawnSync } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { createServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import { startFakeTelegram, textUpdate } from "../fakes/telegram-server.js";
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
import { dropSchemas, SKIP_REASON, TEST_DATABASE_URL } from "../helpers/postgres.js";

const PROMTOOL = "/usr/bin/promtool";

/** The value of the one sample `name{labels}` (labels in any order), or undefined when absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split("\n")) {
    if (line.startsWith("#")) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found = Object.fromEntries(
      [...(match[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((m) => [
        m[1],
        m[2],
      ]),
    );
    if (Object.entries(labels).every(([k, v]) => found[k] === v)) return Number(match[3]);
  }
  return undefined;
}

interface OpenApiPaths {
  paths: Record<
    string,
    Record<string, { operationId?: string; responses: Record<string, { content?: Record<string, unknown> }> }>
  >;
}

describe("metrics", () => {
  let fake: FakeOpenAI;
  let home: string;
  let daemon: TestDaemon;
  let metricsPort: number;
  let text = "";

  const send = (fighter: string, message: string) =>
    daemon.request("POST", `/api/v1/fighters/${fighter}/message`, { message });

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    const port = await freePort();
    metricsPort = await freePort();
    writeConfig(
      home,
      port,
      fake.url,
      `\n[creed]\nreflect = false\n\n[metrics]\nenabled = true\nlisten = "127.0.0.1:${metricsPort}"\n\n` +
        `[[pricing]]\nprovider = "openai"\nmodel = "fake-model"\ninput_per_mtok = 1\noutput_per_mtok = 2\n\n` +
        `[[providers.endpoints]]\nprovider = "openai"\nbase_url = "${fake.url}"\n`,
    );
    // A gorilla on its own model (so the conversation's model counts stay exact), fired every second.
    writeGorilla(
      home,
      "tick",
      `${gorillaToml("tick", "every 1s", "timeout_s = 60")}\n[model]\nprovider = "openai"\nmodel = "gorilla-model"\nbase_url = "${fake.url}"\n`,
    );
    daemon = await startDaemon(home, port);
    const spawned = await daemon.request("POST", "/api/v1/fighters", {
      manifest: {
        name: "meter",
        description: "meter",
        system_prompt: "You count.",
        capabilities: [{ type: "memory" }],
      },
    });
    expect(spawned.status).toBe(201);

    // 1: a tool call, then the answer: two model calls, one move, completed.
    fake.enqueue(
      {
        tool_calls: [{ name: "memory_store", arguments: { key: "k", value: "v" } }],
        usage: { prompt_tokens: 10, completion_tokens: 5 },
      },
      { text: "stored", usage: { prompt_tokens: 12, completion_tokens: 7 } },
    );
    expect((await send("meter", "remember k")).status).toBe(200);
    // 2: the model refuses: one failed model call, a failed turn.
    fake.enqueue({ status: 400, error_message: "the model refused the request" });
    expect((await send("meter", "fail now")).status).toBe(502);
    // 3: a move the fighter holds no grant for (denied), then the answer.
    fake.enqueue(
      {
        tool_calls: [{ name: "shell_exec", arguments: { command: "true" } }],
        usage: { prompt_tokens: 3, completion_tokens: 1 },
      },
      { text: "could not", usage: { prompt_tokens: 4, completion_tokens: 2 } },
    );
    expect((await send("meter", "run true")).status).toBe(200);
    // 4: refused before it is recorded: a bout that does not exist.
    const refused = await daemon.request("POST", "/api/v1/fighters/meter/message", {
      message: "hello",
      bout_id: randomUUID(),
    });
    expect(refused.status).toBe(404);

    // 5: the gorilla, unleashed until one scheduled run has ended ok, then caged.
    expect((await daemon.request("POST", "/api/v1/gorillas/tick/unleash")).status).toBe(200);
    for (let tries = 0; ; tries++) {
      const runs = (
        await daemon.request<{ runs: { outcome?: string }[] }>("GET", "/api/v1/gorillas/tick/runs")
      ).body.runs;
      if (runs.some((run) => run.outcome === "ok")) break;
      if (tries > 300) throw new Error(`no gorilla run ended: ${JSON.stringify(runs)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect((await daemon.request("POST", "/api/v1/gorillas/tick/cage")).status).toBe(200);

    const response = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toContain("text/plain");
    text = await response.text();
  }, 120_000);

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    if (home) removeHome(home);
  });

  it("counts turns by outcome and origin, and times them", () => {
    expect(sample(text, "spar_turns_total", { outcome: "completed", origin: "user" })).toBe(2);
    expect(sample(text, "spar_turns_total", { outcome: "failed", origin: "user" })).toBe(1);
    // The histogram has no origin label: the gorilla's turns are in it too.
    const gorilla = sample(text, "spar_turns_total", { outcome: "completed", origin: "gorilla" }) ?? 0;
    expect(sample(text, "spar_turn_duration_seconds_count", { outcome: "completed" })).toBe(2 + gorilla);
    expect(sample(text, "spar_turn_duration_seconds_count", { outcome: "failed" })).toBe(1);
    // No fighter names unless [metrics] fighter_labels is on.
    expect(text).not.toContain('fighter="meter"');
  });

  it("counts model calls, their tokens and cost by configured provider and model", () => {
    const model = { provider: "openai", model: "fake-model" };
    expect(sample(text, "spar_model_calls_total", { ...model, outcome: "ok" })).toBe(4);
    expect(sample(text, "spar_model_calls_total", { ...model, outcome: "error" })).toBe(1);
    // A turn's calls stream (its deltas reach the event stream), whether or not its caller streams.
    expect(sample(text, "spar_model_call_duration_seconds_count", { ...model, streaming: "true" })).toBe(5);
    expect(sample(text, "spar_model_tokens_total", { ...model, type: "input" })).toBe(10 + 12 + 3 + 4);
    expect(sample(text, "spar_model_tokens_total", { ...model, type: "output" })).toBe(5 + 7 + 1 + 2);
    // 29 input tokens at 1 per million, 15 output at 2 per million.
    const cost = sample(text, "spar_model_cost_total", model);
    expect(cost).toBeCloseTo((29 * 1 + 15 * 2) / 1e6, 12);
  });

  it("counts tool calls by move and outcome", () => {
    expect(sample(text, "spar_move_calls_total", { move: "memory_store", outcome: "ok" })).toBe(1);
    expect(sample(text, "spar_move_calls_total", { move: "shell_exec", outcome: "denied" })).toBe(1);
    expect(sample(text, "spar_move_call_duration_seconds_count", { move: "memory_store" })).toBe(1);
  });

  it("times store commits and reads the gauges at scrape", () => {
    // Each turn that was recorded ends with one durable commit (the completed two and the failed one).
    expect(
      sample(text, "spar_store_commit_duration_seconds_count", { store: "sqlite" }),
    ).toBeGreaterThanOrEqual(3);
    expect(sample(text, "spar_approvals_pending")).toBe(0);
    expect(sample(text, "spar_turns_queued")).toBe(0);
    expect(sample(text, "spar_fighters", { status: "resting" })).toBe(0);
    expect(sample(text, "spar_fighters", { status: "idle" })).toBeGreaterThanOrEqual(2);
    expect(sample(text, "process_resident_memory_bytes")).toBeGreaterThan(0);
    expect(sample(text, "nodejs_heap_size_used_bytes")).toBeGreaterThan(0);
    expect(sample(text, "nodejs_eventloop_lag_seconds")).toBeGreaterThanOrEqual(0);
  });

  it("counts gorilla runs by outcome and times how late a scheduled one started", () => {
    expect(
      sample(text, "spar_gorilla_runs_total", { gorilla: "tick", trigger: "schedule", outcome: "ok" }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      sample(text, "spar_gorilla_run_lateness_seconds_count", { gorilla: "tick" }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      sample(text, "spar_turns_total", { outcome: "completed", origin: "gorilla" }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      sample(text, "spar_model_calls_total", { provider: "openai", model: "gorilla-model", outcome: "ok" }),
    ).toBeGreaterThanOrEqual(1);
  });

  it("counts a turn refused at the door", () => {
    expect(sample(text, "spar_turns_total", { outcome: "refused", origin: "user" })).toBe(1);
  });

  it("serves the same metrics on the API to an unsigned loopback caller, and nothing else on its listener", async () => {
    const api = await fetch(`${daemon.url}/api/v1/metrics`);
    expect(api.status).toBe(200);
    const body = await api.text();
    expect(sample(body, "spar_turns_total", { outcome: "completed", origin: "user" })).toBe(2);
    expect(api.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    // In the API's document, as a generator needs it: named, and text rather than JSON.
    const document = (await daemon.request<OpenApiPaths>("GET", "/api/v1/openapi.json")).body;
    const operation = document.paths["/api/v1/metrics"]?.get;
    expect(operation?.operationId).toBe("getMetrics");
    expect(Object.keys(operation?.responses["200"]?.content ?? {})).toEqual(["text/plain"]);
    expect((await fetch(`http://127.0.0.1:${metricsPort}/api/v1/fighters`)).status).toBe(404);
    expect((await fetch(`http://127.0.0.1:${metricsPort}/metrics`, { method: "POST" })).status).toBe(405);
  });

  it("passes promtool check metrics", (context) => {
    if (!existsSync(PROMTOOL)) {
      if (underCi()) throw new Error(`CI is set but ${PROMTOOL} is missing (Debian's prometheus package)`);
      context.skip();
    }
    const check = spawnSync(PROMTOOL, ["check", "metrics"], { input: text, encoding: "utf8" });
    expect(`${check.stdout}${check.stderr}`.trim()).toBe("");
    expect(check.status).toBe(0);
  });

  it("refuses to start with an unsigned metrics listener off loopback", async () => {
    const other = tempHome();
    try {
      writeConfig(
        other,
        await freePort(),
        fake.url,
        `\n[metrics]\nenabled = true\nlisten = "0.0.0.0:${await freePort()}"\n`,
      );
      await expect(startDaemon(other, 0)).rejects.toThrow(
        /not a loopback address: set \[metrics\] bearer_token_env/,
      );
    } finally {
      removeHome(other);
    }
  });

  it("refuses to start, naming the setting and the holder, when the metrics port is taken", async () => {
    const other = tempHome();
    const holder = createServer();
    const taken = await freePort();
    await new Promise<void>((done) => holder.listen(taken, "127.0.0.1", done));
    try {
      writeConfig(
        other,
        await freePort(),
        fake.url,
        `\n[metrics]\nenabled = true\nlisten = "127.0.0.1:${taken}"\n`,
      );
      await expect(startDaemon(other, 0)).rejects.toThrow(
        new RegExp(
          `port ${taken} on 127\\.0\\.0\\.1 is already in use by .*set \\[metrics\\] listen to a free address`,
        ),
      );
    } finally {
      holder.close();
      removeHome(other);
    }
  });

  it("requires the bearer token on a listener that has one", async () => {
    const other = tempHome();
    const port = await freePort();
    const listen = await freePort();
    writeConfig(
      other,
      port,
      fake.url,
      `\n[metrics]\nenabled = true\nlisten = "127.0.0.1:${listen}"\nbearer_token_env = "SPAR_METRICS_TOKEN"\n`,
    );
    const second = await startDaemon(other, port, { SPAR_METRICS_TOKEN: "scrape-secret-123" });
    try {
      expect((await fetch(`http://127.0.0.1:${listen}/metrics`)).status).toBe(401);
      const wrong = { authorization: "Bearer nope" };
      expect((await fetch(`http://127.0.0.1:${listen}/metrics`, { headers: wrong })).status).toBe(401);
      const right = { authorization: "Bearer scrape-secret-123" };
      const ok = await fetch(`http://127.0.0.1:${listen}/metrics`, { headers: right });
      expect(ok.status).toBe(200);
      expect(await ok.text()).toContain("# TYPE spar_turns_total counter");
    } finally {
      await second.stop();
      removeHome(other);
    }
  });

  it("is off by default: no metrics route", async () => {
    const other = tempHome();
    const port = await freePort();
    writeConfig(other, port, fake.url);
    const plain = await startDaemon(other, port);
    try {
      expect((await fetch(`${plain.url}/api/v1/metrics`)).status).toBe(404);
    } finally {
      await plain.stop();
      removeHome(other);
    }
  });
});

describe("metrics of a channel", () => {
  it("counts a reply delivered to Telegram by platform and outcome", async () => {
    const [fake, telegram] = await Promise.all([startFakeOpenAI(), startFakeTelegram()]);
    const home = tempHome();
    const port = await freePort();
    const webhookPort = await freePort();
    const metricsPort = await freePort();
    writeConfig(
      home,
      port,
      fake.url,
      `\n[creed]\nreflect = false\n\n[metrics]\nenabled = true\nlisten = "127.0.0.1:${metricsPort}"\n\n` +
        `[channels]\nwebhook_listen = "127.0.0.1:${webhookPort}"\n\n` +
        `[channels.telegram]\napi_root = "${telegram.url}"\nallowlist = [424242]\n\n` +
        `[tunnel]\nmode = "manual"\nurl = "http://127.0.0.1:${webhookPort}"\n`,
    );
    const daemon = await startDaemon(home, port, {
      TELEGRAM_BOT_TOKEN: telegram.token,
      TELEGRAM_WEBHOOK_SECRET: randomBytes(24).toString("base64url"),
    });
    try {
      for (let tries = 0; telegram.webhook()?.url === undefined; tries++) {
        if (tries > 300) throw new Error("no setWebhook");
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(
        await telegram.deliver(textUpdate({ update_id: 1, from: 424242, chat: 424242, text: "hi there" })),
      ).toBe(200);
      for (let tries = 0; telegram.sent().length === 0; tries++) {
        if (tries > 300) throw new Error("no reply sent");
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      // The delivery is counted once its post has returned: read until it shows.
      let text = "";
      for (let tries = 0; tries < 100; tries++) {
        text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
        if (
          sample(text, "spar_channel_deliveries_total", { platform: "telegram", outcome: "ok" }) !== undefined
        )
          break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(sample(text, "spar_channel_deliveries_total", { platform: "telegram", outcome: "ok" })).toBe(1);
      expect(sample(text, "spar_turns_total", { outcome: "completed", origin: "channel" })).toBe(1);
    } finally {
      await daemon.stop();
      await Promise.all([fake.close(), telegram.close()]);
      removeHome(home);
    }
  }, 60_000);
});

describe.skipIf(!TEST_DATABASE_URL)(
  `metrics of a PostgreSQL store${TEST_DATABASE_URL ? "" : ` (${SKIP_REASON})`}`,
  () => {
    it("times the store's commits, labelled postgres", async () => {
      const schema = `t_metrics_${randomUUID().replaceAll("-", "").slice(0, 16)}`;
      const fake = await startFakeOpenAI();
      const home = tempHome();
      const port = await freePort();
      writeConfig(
        home,
        port,
        fake.url,
        `\n[plugins]\nstore = "store-postgres"\n\n[store.postgres]\nschema = "${schema}"\npool_max = 4\n\n` +
          "[creed]\nreflect = false\n\n[metrics]\nenabled = true\n",
      );
      const daemon = await startDaemon(home, port, { SPAR_DATABASE_URL: TEST_DATABASE_URL ?? "" });
      try {
        expect(
          (await daemon.request("POST", "/api/v1/fighters/spar/message", { message: "hi" })).status,
        ).toBe(200);
        const text = await (await fetch(`${daemon.url}/api/v1/metrics`)).text();
        expect(
          sample(text, "spar_store_commit_duration_seconds_count", { store: "postgres" }),
        ).toBeGreaterThan(0);
        expect(sample(text, "spar_store_commit_duration_seconds_count", { store: "sqlite" })).toBeUndefined();
        expect(sample(text, "spar_turns_total", { outcome: "completed", origin: "user" })).toBe(1);
      } finally {
        await daemon.stop();
        await fake.close();
        removeHome(home);
        await dropSchemas(TEST_DATABASE_URL ?? "", [schema]);
      }
    }, 60_000);
  },
);
