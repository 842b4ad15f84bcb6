/**
 * The provider contract: every provider plugin, loaded by the real plugin host from dist/ and called
 * through the kernel's own retry and deadline policy (callProvider), must pass the same scenarios
 * against a fake that speaks its real wire protocol to its official SDK.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../kernel/host/config.js";
import { discoverPlugins, pluginRoots } from "../../kernel/host/plugin-manifest.js";
import { callProvider } from "../../kernel/provider-call.js";
import { createRing } from "../../kernel/ring.js";
import { createLogger } from "../../lib/logger.js";
import { CONTEXT_HEADING } from "../../sdk/turn-context.js";
import type { LlmDriver, LlmRequest, ModelSettings } from "../../sdk/types.js";
import { KERNEL_VERSION } from "../../sdk/version.js";
import { startFakeAnthropic } from "../fakes/anthropic-server.js";
import { startFakeGemini } from "../fakes/gemini-server.js";
import { startFakeOllama } from "../fakes/ollama-server.js";
import { startFakeOpenAI } from "../fakes/openai-server.js";
import type { FakeLlmServer } from "../fakes/scripted.js";
import { tempHome } from "../helpers/daemon.js";
import { failure } from "../helpers/provider.js";

const KEY_ENV = "CONTRACT_PROVIDER_KEY";
process.env[KEY_ENV] = "contract-secret-key";

interface ProviderCase {
  id: string;
  start: () => Promise<FakeLlmServer>;
  settings: (url: string) => ModelSettings;
  /** Whether the SDK lets the driver read a 429's retry-after header. */
  retryAfter: boolean;
  /** Which prompt-cache counts the API reports (Ollama: none; OpenAI-style APIs: reads only). */
  cache: "none" | "reads" | "reads and writes";
}

const CASES: ProviderCase[] = [
  {
    id: "openai",
    start: startFakeOpenAI,
    settings: (url) => ({ provider: "openai", model: "gpt-fake", base_url: url, api_key_env: KEY_ENV }),
    retryAfter: true,
    cache: "reads",
  },
  {
    id: "openai_compatible",
    start: startFakeOpenAI,
    settings: (url) => ({ provider: "openai_compatible", model: "local-fake", base_url: url }),
    retryAfter: true,
    cache: "reads",
  },
  {
    id: "openrouter",
    start: startFakeOpenAI,
    settings: (url) => ({
      provider: "openrouter",
      model: "vendor/fake",
      base_url: url,
      api_key_env: KEY_ENV,
    }),
    retryAfter: true,
    cache: "reads",
  },
  {
    id: "anthropic",
    start: startFakeAnthropic,
    settings: (url) => ({ provider: "anthropic", model: "claude-fake", base_url: url, api_key_env: KEY_ENV }),
    retryAfter: true,
    cache: "reads and writes",
  },
  {
    id: "google",
    start: startFakeGemini,
    settings: (url) => ({ provider: "google", model: "gemini-fake", base_url: url, api_key_env: KEY_ENV }),
    retryAfter: true,
    cache: "reads",
  },
  {
    id: "ollama",
    start: startFakeOllama,
    settings: (url) => ({ provider: "ollama", model: "llama-fake", base_url: url }),
    retryAfter: true,
    cache: "none",
  },
];

const home = tempHome();
const config = loadConfig(home, {});
const plugins = discoverPlugins(pluginRoots(home, []), KERNEL_VERSION);
const ring = createRing({
  config,
  home,
  env: process.env,
  version: KERNEL_VERSION,
  plugins,
  log: createLogger(() => undefined),
});

async function driverFor(settings: ModelSettings): Promise<LlmDriver> {
  await ring.host.activate(`onProvider:${settings.provider}`);
  // The credential the kernel would hand over for a configured endpoint: the named key, or none.
  const key = settings.api_key_env;
  const credential = key ? { key_env: key, api_key: process.env[key] } : {};
  const driver = await ring.hooks.provider.resolve.promise(settings, credential);
  if (!driver) throw new Error(`no driver for ${settings.provider}`);
  return driver;
}

const LOOKUP = {
  name: "lookup",
  description: "Look a word up.",
  input_schema: { type: "object", properties: { word: { type: "string" } }, required: ["word"] },
};

const policy = { timeoutMs: 10_000, maxRetries: 2, baseDelayMs: 20 };

describe.each(CASES)("provider $id", (c) => {
  let fake: FakeLlmServer;
  let settings: ModelSettings;
  let driver: LlmDriver;
  const ask = (overrides: Partial<LlmRequest> = {}): LlmRequest => ({
    model: settings,
    system: "You are a contract test.",
    messages: [{ role: "user", content: "hello there" }],
    tools: [LOOKUP],
    ...overrides,
  });

  beforeAll(async () => {
    fake = await c.start();
    settings = c.settings(fake.url);
    driver = await driverFor(settings);
  });
  afterAll(() => fake.close());

  it("answers a plain request with usage and the model", async () => {
    fake.reset();
    fake.enqueue({ text: "plain answer", usage: { prompt_tokens: 11, completion_tokens: 3 } });
    const reply = await callProvider(driver, ask(), policy);
    expect(reply.text).toBe("plain answer");
    expect(reply.tool_calls).toEqual([]);
    expect(reply.usage).toEqual({ input_tokens: 11, output_tokens: 3 });
    expect(reply.stop_reason).toBe("end");
    expect(reply.model).toContain(settings.model);
    const [call] = fake.calls();
    expect(call?.system).toContain("You are a contract test.");
    expect(call?.last_user_text).toBe("hello there");
    expect(call?.tools).toEqual(["lookup"]);
  });

  it("reports the prompt tokens read from and written to the provider's cache, within the input", async () => {
    fake.reset();
    const usage = { prompt_tokens: 100, completion_tokens: 5, cached_tokens: 60, cache_write_tokens: 30 };
    fake.enqueue({ text: "cached", usage }, { text: "streamed", usage });
    const unary = await callProvider(driver, ask(), policy);
    const streamed = await callProvider(driver, ask({ onDelta: () => undefined }), policy);
    const reported = {
      none: { input_tokens: 100, output_tokens: 5 },
      reads: { input_tokens: 100, output_tokens: 5, cached_tokens: 60 },
      "reads and writes": { input_tokens: 100, output_tokens: 5, cached_tokens: 60, cache_write_tokens: 30 },
    }[c.cache];
    expect(unary.usage).toEqual(reported);
    expect(streamed.usage).toEqual(reported);
  });

  it("streams a reply in several deltas", async () => {
    fake.reset();
    fake.enqueue({ text: "one two three four five" });
    const deltas: string[] = [];
    const reply = await callProvider(driver, ask({ onDelta: (d) => deltas.push(d) }), policy);
    expect(deltas.length).toBeGreaterThanOrEqual(2);
    expect(deltas.join("")).toBe("one two three four five");
    expect(reply.text).toBe("one two three four five");
    expect(reply.usage.output_tokens).toBeGreaterThan(0);
    expect(fake.calls()[0]?.stream).toBe(true);
  });

  it.each([false, true])("completes a tool call round trip (streamed: %s)", async (streamed) => {
    fake.reset();
    fake.enqueue({ tool_calls: [{ name: "lookup", arguments: { word: "spar" } }] });
    const onDelta = streamed ? () => undefined : undefined;
    const first = await callProvider(driver, ask({ onDelta }), policy);
    expect(first.stop_reason).toBe("tool_use");
    expect(first.tool_calls).toHaveLength(1);
    const call = first.tool_calls[0];
    expect(call?.name).toBe("lookup");
    expect(call?.arguments).toEqual({ word: "spar" });
    expect(call?.id).toBeTruthy();

    const second = await callProvider(
      driver,
      ask({
        onDelta,
        messages: [
          { role: "user", content: "hello there" },
          { role: "assistant", content: first.text, tool_calls: first.tool_calls },
          { role: "tool", tool_call_id: call?.id ?? "", name: "lookup", content: "a practice fight" },
        ],
      }),
      policy,
    );
    expect(second.text).toContain("a practice fight");
    expect(fake.calls()[1]?.tool_results.join("")).toContain("a practice fight");
  });

  it.each([false, true])(
    "sends the turn's context after the history, before the turn's messages, nothing lost (streamed: %s)",
    async (streamed) => {
      fake.reset();
      const context = `${CONTEXT_HEADING}\n## Creed of tester, lately\nHistory: 2 conversations`;
      const request = ask({
        onDelta: streamed ? () => undefined : undefined,
        context,
        turn_start: 2,
        messages: [
          { role: "user", content: "earlier question" },
          { role: "assistant", content: "earlier answer" },
          { role: "user", content: "look spar up" },
          {
            role: "assistant",
            content: "",
            tool_calls: [{ id: "c1", name: "lookup", arguments: { word: "spar" } }],
          },
          { role: "tool", tool_call_id: "c1", name: "lookup", content: "a practice fight" },
        ],
      });
      const reply = await callProvider(driver, request, policy);
      expect(reply.text).toContain("a practice fight");
      const [call] = fake.calls();
      expect(call?.system).toBe("You are a contract test.");
      expect(call?.context).toBe(context);
      expect(call?.last_user_text).toBe("look spar up");
      expect(call?.tool_results.join("")).toContain("a practice fight");
      const order = call?.transcript ?? [];
      const at = (text: string) => order.findIndex((t) => t.includes(text));
      expect(at("You are a contract test.")).toBe(0);
      expect(at("earlier question")).toBeLessThan(at("earlier answer"));
      expect(at("earlier answer")).toBeLessThan(at(CONTEXT_HEADING));
      expect(at(CONTEXT_HEADING)).toBeLessThan(at("look spar up"));
      expect(at("look spar up")).toBeLessThan(at("a practice fight"));
      // Once: the context, and every message, is sent whole and only where it belongs.
      expect(order.filter((t) => t.includes(CONTEXT_HEADING))).toEqual([context]);

      // Without a user message after turn_start (a caller's own request), it follows the system prompt.
      fake.reset();
      await callProvider(driver, ask({ context, turn_start: 1 }), policy);
      expect(fake.calls()[0]?.system).toBe(`You are a contract test.\n\n${context}`);
      expect(fake.calls()[0]?.last_user_text).toBe("hello there");
    },
  );

  it("gives PROVIDER_TIMEOUT within the deadline when the provider hangs", async () => {
    fake.reset();
    fake.enqueue({ text: "too late", delay_ms: 5_000 });
    const started = Date.now();
    const err = await failure(callProvider(driver, ask(), { ...policy, timeoutMs: 400 }));
    expect(err.code).toBe("PROVIDER_TIMEOUT");
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it("retries a 5xx a bounded number of times, then reports PROVIDER_ERROR with the provider's message", async () => {
    fake.reset();
    fake.enqueue({ status: 503, error_message: "overloaded A" }, { text: "recovered" });
    expect((await callProvider(driver, ask(), policy)).text).toBe("recovered");
    expect(fake.calls()).toHaveLength(2);

    fake.reset();
    for (let i = 0; i < 3; i++) fake.enqueue({ status: 500, error_message: "engine down" });
    const err = await failure(callProvider(driver, ask(), policy));
    expect(err.code).toBe("PROVIDER_ERROR");
    expect(err.message).toContain("engine down");
    expect(fake.calls()).toHaveLength(3);
  });

  it("honours a 429's retry-after", async () => {
    fake.reset();
    fake.enqueue(
      { status: 429, error_message: "slow down", headers: { "retry-after": "1" } },
      { text: "after the wait" },
    );
    const started = Date.now();
    const reply = await callProvider(driver, ask(), policy);
    expect(reply.text).toBe("after the wait");
    if (c.retryAfter) expect(Date.now() - started).toBeGreaterThanOrEqual(950);
  });

  it("does not retry a request the provider refuses as bad", async () => {
    fake.reset();
    fake.enqueue({ status: 400, error_message: "bad request body" });
    const err = await failure(callProvider(driver, ask(), policy));
    expect(err.code).toBe("PROVIDER_ERROR");
    expect(fake.calls()).toHaveLength(1);
  });

  it("reports a malformed reply as PROVIDER_ERROR", async () => {
    fake.reset();
    fake.enqueue({ malformed: true }, { malformed: true }, { malformed: true });
    expect((await failure(callProvider(driver, ask(), policy))).code).toBe("PROVIDER_ERROR");
  });

  it("reports a stream cut off mid-reply as PROVIDER_ERROR, not a short answer", async () => {
    fake.reset();
    fake.enqueue({ text: "this reply is cut off somewhere in the middle of it", truncate_stream: true });
    const err = await failure(callProvider(driver, ask({ onDelta: () => undefined }), policy));
    expect(err.code).toBe("PROVIDER_ERROR");
  });

  it("reports a dead provider as PROVIDER_ERROR after bounded retries", async () => {
    const gone = await c.start();
    const url = gone.url;
    await gone.close();
    const dead = await driverFor(c.settings(url));
    const started = Date.now();
    const err = await failure(callProvider(dead, ask(), policy));
    expect(err.code).toBe("PROVIDER_ERROR");
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("answers a probe for spar doctor", async () => {
    expect(await driver.probe(AbortSignal.timeout(5_000))).toMatch(/\d+ models? (listed|installed)/);
  });
});
