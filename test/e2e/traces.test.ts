/**
 * OpenTelemetry traces end to end (issue 34 item 4; README "Metrics and traces"): the real daemon
 * with `[traces] enabled` exporting to a fake OTLP/HTTP collector on 127.0.0.1, a scripted turn with
 * a tool call sent with a W3C `traceparent`: the turn's span is that trace's child, the model calls'
 * and the move's spans are the turn's children with the GenAI attributes, and the request the fake
 * model received carries the turn's trace.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeAnthropic, startFakeAnthropic } from "../fakes/anthropic-server.js";
import { type FakeGemini, startFakeGemini } from "../fakes/gemini-server.js";
import { type FakeOllama, startFakeOllama } from "../fakes/ollama-server.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  type FakeOtlpCollector,
  type ReceivedSpan,
  startFakeOtlpCollector,
} from "../fakes/otlp-collector.js";
import {
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";

// OTLP's span kinds, as the JSON encoding numbers them.
const INTERNAL = 1;
const CLIENT = 3;

describe("traces", () => {
  let fake: FakeOpenAI;
  let anthropic: FakeAnthropic;
  let gemini: FakeGemini;
  let ollama: FakeOllama;
  let collector: FakeOtlpCollector;
  let home: string;
  let daemon: TestDaemon;
  const traceId = randomBytes(16).toString("hex");
  const callerSpan = randomBytes(8).toString("hex");
  let spans: ReceivedSpan[] = [];
  let turn: ReceivedSpan;

  beforeAll(async () => {
    [fake, anthropic, gemini, ollama, collector] = await Promise.all([
      startFakeOpenAI(),
      startFakeAnthropic(),
      startFakeGemini(),
      startFakeOllama(),
      startFakeOtlpCollector(),
    ]);
    home = tempHome();
    const port = await freePort();
    writeConfig(
      home,
      port,
      fake.url,
      `\n[creed]\nreflect = false\n\n[traces]\nenabled = true\nendpoint = "${collector.url}"\n` +
        `service_name = "spar-e2e"\nheaders_env = "SPAR_OTLP_HEADERS"\n\n` +
        `[[providers.endpoints]]\nprovider = "anthropic"\nbase_url = "${anthropic.url}"\n\n` +
        `[[providers.endpoints]]\nprovider = "google"\nbase_url = "${gemini.url}"\n\n` +
        `[[providers.endpoints]]\nprovider = "ollama"\nbase_url = "${ollama.url}"\n`,
    );
    daemon = await startDaemon(home, port, {
      SPAR_OTLP_HEADERS: "x-collector-key=e2e%20key",
      ANTHROPIC_API_KEY: "sk-ant-e2e",
      GEMINI_API_KEY: "gem-e2e",
    });
    const spawned = await daemon.request("POST", "/api/v1/fighters", {
      manifest: {
        name: "tracer",
        description: "tracer",
        system_prompt: "You trace.",
        capabilities: [{ type: "memory" }],
      },
    });
    expect(spawned.status).toBe(201);
    fake.enqueue(
      {
        tool_calls: [{ name: "memory_store", arguments: { key: "secret-key-name", value: "private value" } }],
        usage: { prompt_tokens: 10, completion_tokens: 5 },
      },
      { text: "stored it", usage: { prompt_tokens: 12, completion_tokens: 7 } },
    );
    const response = await fetch(`${daemon.url}/api/v1/fighters/tracer/message`, {
      method: "POST",
      headers: { "content-type": "application/json", traceparent: `00-${traceId}-${callerSpan}-01` },
      body: JSON.stringify({ message: "remember this private text" }),
    });
    expect(response.status).toBe(200);
    spans = await collector.waitFor(
      (received) =>
        received.filter((s) => s.traceId === traceId && s.name.startsWith("chat ")).length >= 2 &&
        received.some((s) => s.traceId === traceId && s.name.startsWith("invoke_agent")),
    );
    spans = spans.filter((s) => s.traceId === traceId);
    const found = spans.find((s) => s.name === "invoke_agent tracer");
    if (!found) throw new Error(`no turn span: ${JSON.stringify(spans.map((s) => s.name))}`);
    turn = found;
  }, 120_000);

  afterAll(async () => {
    await daemon?.stop();
    await Promise.all([
      fake?.close(),
      anthropic?.close(),
      gemini?.close(),
      ollama?.close(),
      collector?.close(),
    ]);
    if (home) removeHome(home);
  });

  it("makes the turn's span a child of the request's traceparent", () => {
    expect(turn.parentSpanId).toBe(callerSpan);
    expect(turn.kind).toBe(INTERNAL);
    expect(turn.attributes).toMatchObject({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": "tracer",
      "spar.turn.origin": "user",
      "spar.outcome": "completed",
    });
    expect(turn.attributes["spar.turn.id"]).toMatch(/\S+/);
    expect(turn.resource).toMatchObject({ "service.name": "spar-e2e" });
    expect(collector.contentTypes[0]).toContain("application/json");
    // The exporter sends the headers [traces] headers_env holds, %-decoded.
    expect(collector.headers[0]?.["x-collector-key"]).toBe("e2e key");
  });

  it("gives each model call a CLIENT span under the turn with the GenAI attributes", () => {
    const calls = spans.filter((s) => s.name === "chat fake-model");
    expect(calls).toHaveLength(2);
    for (const call of calls) {
      expect(call.parentSpanId).toBe(turn.spanId);
      expect(call.kind).toBe(CLIENT);
      expect(call.attributes).toMatchObject({
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "fake-model",
        "gen_ai.response.model": "fake-model",
      });
    }
    const usage = calls.map((c) => [
      c.attributes["gen_ai.usage.input_tokens"],
      c.attributes["gen_ai.usage.output_tokens"],
    ]);
    expect(usage.sort()).toEqual([
      [10, 5],
      [12, 7],
    ]);
    const reasons = calls.map((c) => c.attributes["gen_ai.response.finish_reasons"]);
    expect(reasons).toContainEqual(["tool_use"]);
    expect(reasons).toContainEqual(["end"]);
  });

  it("gives the move an execute_tool span under the turn", () => {
    const move = spans.find((s) => s.name === "execute_tool memory_store");
    expect(move?.parentSpanId).toBe(turn.spanId);
    expect(move?.kind).toBe(INTERNAL);
    expect(move?.attributes).toMatchObject({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "memory_store",
      "spar.outcome": "ok",
    });
  });

  it("traces the store's commit of the turn under the turn", () => {
    const commits = spans.filter((s) => s.name === "store commit");
    expect(commits.length).toBeGreaterThanOrEqual(1);
    expect(commits.every((c) => c.parentSpanId === turn.spanId)).toBe(true);
    expect(commits[0]?.attributes).toMatchObject({ "db.system.name": "sqlite" });
  });

  it("carries the turn's trace into the requests to the model", () => {
    const sent = fake.requests.filter((r) => r.path.endsWith("/chat/completions")).slice(-2);
    expect(sent).toHaveLength(2);
    const modelSpans = new Set(spans.filter((s) => s.name === "chat fake-model").map((s) => s.spanId));
    for (const request of sent) {
      const header = String(request.headers.traceparent ?? "");
      const [, trace, parent] = header.split("-");
      expect(trace).toBe(traceId);
      // Its parent is the model call's own span.
      expect(modelSpans.has(parent ?? "")).toBe(true);
    }
  });

  it("puts no message content and no key in any span", () => {
    const text = JSON.stringify(spans);
    for (const secret of [
      "remember this private text",
      "private value",
      "stored it",
      "sk-test-secret-0000",
      "e2e key",
    ])
      expect(text).not.toContain(secret);
  });

  it("starts a trace of its own for a request without a traceparent", async () => {
    fake.enqueue({ text: "plain", usage: { prompt_tokens: 1, completion_tokens: 1 } });
    const before = new Set(collector.spans.map((s) => s.spanId));
    expect((await daemon.request("POST", "/api/v1/fighters/tracer/message", { message: "hi" })).status).toBe(
      200,
    );
    const all = await collector.waitFor((received) =>
      received.some((s) => !before.has(s.spanId) && s.name === "invoke_agent tracer"),
    );
    const root = all.find((s) => !before.has(s.spanId) && s.name === "invoke_agent tracer");
    expect(root?.parentSpanId ?? "").toBe("");
    expect(root?.traceId).not.toBe(traceId);
  });

  it("accepts a traceparent on the OpenAI-compatible endpoint too", async () => {
    fake.enqueue({ text: "compatible", usage: { prompt_tokens: 2, completion_tokens: 1 } });
    const trace = randomBytes(16).toString("hex");
    const response = await fetch(`${daemon.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", traceparent: `00-${trace}-${callerSpan}-01` },
      body: JSON.stringify({ model: "tracer", messages: [{ role: "user", content: "hello" }] }),
    });
    expect(response.status).toBe(200);
    const received = await collector.waitFor((all) =>
      all.some((s) => s.traceId === trace && s.name === "invoke_agent tracer"),
    );
    const root = received.find((s) => s.traceId === trace && s.name === "invoke_agent tracer");
    expect(root?.parentSpanId).toBe(callerSpan);
  });

  it.each([
    ["anthropic", "claude-fake", () => anthropic],
    ["google", "gemini-fake", () => gemini],
    ["ollama", "llama-fake", () => ollama],
  ] as const)("carries the trace into a %s model's requests too", async (provider, model, server) => {
    const fakeServer = server();
    const spawned = await daemon.request("POST", "/api/v1/fighters", {
      manifest: {
        name: `via-${provider}`,
        description: provider,
        system_prompt: "You are brief.",
        model: { provider, model, base_url: fakeServer.url },
      },
    });
    expect(spawned.status).toBe(201);
    fakeServer.enqueue({ text: "hello" });
    const trace = randomBytes(16).toString("hex");
    const response = await fetch(`${daemon.url}/api/v1/fighters/via-${provider}/message`, {
      method: "POST",
      headers: { "content-type": "application/json", traceparent: `00-${trace}-${callerSpan}-01` },
      body: JSON.stringify({ message: "hi" }),
    });
    expect(response.status).toBe(200);
    const header = String(fakeServer.requests.at(-1)?.headers.traceparent ?? "");
    expect(header.split("-")[1]).toBe(trace);
    const received = await collector.waitFor((all) =>
      all.some((s) => s.traceId === trace && s.name === `chat ${model}`),
    );
    const call = received.find((s) => s.traceId === trace && s.name === `chat ${model}`);
    expect(call?.attributes["gen_ai.provider.name"]).toBe(provider);
  });
});
