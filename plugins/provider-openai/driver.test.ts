import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import type { LlmRequest, ModelSettings, ToolDefinition } from "../../sdk/index.js";
import type { FakeOpenAI } from "../../test/fakes/openai-server.js";
import { startFakeOpenAI } from "../../test/fakes/openai-server.js";
import { chatRequest, failure, providerResolver } from "../../test/helpers/provider.js";
import { createOpenAiDriver, type OpenAiDriverOptions } from "./driver.js";
import plugin from "./index.js";

const KEY_ENV = "SPAR_TEST_OPENAI_KEY";
const KEY = "sk-test-0123456789abcdef";
const LOOKUP: ToolDefinition = {
  name: "lookup",
  description: "Looks a word up.",
  input_schema: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
};

let fake: FakeOpenAI;
let settings: ModelSettings;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  settings = { provider: "openai", model: "gpt-test", base_url: fake.url, api_key_env: KEY_ENV };
});
afterEach(() => {
  fake.reset();
  vi.unstubAllEnvs();
});
afterAll(() => fake.close());

// The driver never retries: retries and the deadline belong to the kernel (kernel/provider-call.ts).
function driver(options: OpenAiDriverOptions = {}, env: NodeJS.ProcessEnv = { [KEY_ENV]: KEY }) {
  return createOpenAiDriver(settings, env, options);
}

function request(overrides: Partial<LlmRequest> = {}): LlmRequest {
  return chatRequest(settings, overrides);
}

describe("createOpenAiDriver", () => {
  it("sends the fighter's prompt_cache_key where the server takes one, and only with the cache on", async () => {
    const cache = { key: "spar-abc", stable_chars: 3 };
    await driver({ promptCacheKey: true }).complete(request({ cache }));
    await driver({ promptCacheKey: true }).complete(request({ cache, onDelta: () => {} }));
    await driver({ promptCacheKey: true }).complete(request());
    await driver().complete(request({ cache }));
    expect(fake.requests.map((r) => r.body?.prompt_cache_key)).toEqual([
      "spar-abc",
      "spar-abc",
      undefined,
      undefined,
    ]);
  });

  it("returns a plain reply with usage, model and stop reason", async () => {
    fake.enqueue({
      text: "Hello there.",
      usage: { prompt_tokens: 12, completion_tokens: 4 },
      model: "gpt-test-0613",
    });
    const reply = await driver().complete(
      request({ model: { ...settings, max_tokens: 256, temperature: 0.2 } }),
    );
    expect(reply).toEqual({
      text: "Hello there.",
      tool_calls: [],
      usage: { input_tokens: 12, output_tokens: 4 },
      stop_reason: "end",
      model: "gpt-test-0613",
    });
    const body = fake.requests[0]?.body;
    expect(body?.model).toBe("gpt-test");
    expect(body?.messages).toEqual([
      { role: "system", content: "You are terse." },
      { role: "user", content: "hi" },
    ]);
    expect(body?.max_completion_tokens).toBe(256);
    expect(body?.temperature).toBe(0.2);
    expect(body?.stream).not.toBe(true);
    expect(body && "tools" in body).toBe(false);
  });

  it("streams text deltas that join to the reply, with usage from the last chunk", async () => {
    const text = "The quick brown fox jumps over the lazy dog.";
    fake.enqueue({ text, usage: { prompt_tokens: 20, completion_tokens: 10 } });
    const deltas: string[] = [];
    const reply = await driver().complete(request({ onDelta: (d) => deltas.push(d) }));
    expect(deltas.length).toBeGreaterThanOrEqual(3);
    expect(deltas.join("")).toBe(text);
    expect(reply).toMatchObject({ text, usage: { input_tokens: 20, output_tokens: 10 }, stop_reason: "end" });
    expect(reply.model).toBe("gpt-test");
    expect(fake.requests[0]?.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });

  describe.each([
    ["non-streamed", undefined],
    ["streamed", () => {}],
  ])("tool calls, %s", (_mode, onDelta) => {
    it("round-trips a call and its result", async () => {
      fake.enqueue({ tool_calls: [{ name: "lookup", arguments: { q: "sparring partner" } }] });
      const first = await driver().complete(request({ tools: [LOOKUP], onDelta }));
      expect(first.stop_reason).toBe("tool_use");
      expect(first.text).toBe("");
      expect(first.tool_calls).toHaveLength(1);
      const call = first.tool_calls[0];
      if (!call) throw new Error("no tool call");
      expect(call).toEqual({
        id: expect.stringMatching(/^call_/),
        name: "lookup",
        arguments: { q: "sparring partner" },
      });

      const final = await driver().complete(
        request({
          tools: [LOOKUP],
          onDelta,
          messages: [
            { role: "user", content: "hi" },
            { role: "assistant", content: "", tool_calls: first.tool_calls },
            { role: "tool", tool_call_id: call.id, name: "lookup", content: "a training opponent" },
          ],
        }),
      );
      expect(final).toMatchObject({ text: "done: a training opponent", stop_reason: "end", tool_calls: [] });

      const sent = fake.requests[1]?.body;
      expect(sent?.messages).toEqual([
        { role: "system", content: "You are terse." },
        { role: "user", content: "hi" },
        {
          role: "assistant",
          content: null,
          tool_calls: [
            {
              id: call.id,
              type: "function",
              function: { name: "lookup", arguments: '{"q":"sparring partner"}' },
            },
          ],
        },
        { role: "tool", tool_call_id: call.id, content: "a training opponent" },
      ]);
      expect(sent?.tools).toEqual([
        {
          type: "function",
          function: { name: "lookup", description: "Looks a word up.", parameters: LOOKUP.input_schema },
        },
      ]);
    });

    it("keeps invalid JSON arguments as raw_arguments", async () => {
      const raw = '{"q": "unterminated';
      fake.enqueue({ tool_calls: [{ name: "lookup", arguments: raw }] });
      const reply = await driver().complete(request({ tools: [LOOKUP], onDelta }));
      expect(reply.tool_calls).toEqual([
        { id: expect.any(String), name: "lookup", arguments: {}, raw_arguments: raw },
      ]);
    });
  });

  it("accumulates several streamed tool calls in order", async () => {
    fake.enqueue({
      tool_calls: [
        { name: "lookup", arguments: { q: "first" } },
        { name: "lookup", arguments: { q: "second" } },
      ],
    });
    const reply = await driver().complete(request({ tools: [LOOKUP], onDelta: () => {} }));
    expect(reply.tool_calls.map((c) => c.arguments)).toEqual([{ q: "first" }, { q: "second" }]);
    expect(new Set(reply.tool_calls.map((c) => c.id)).size).toBe(2);
  });

  it("sends the key from the named variable as a bearer token", async () => {
    await driver().complete(request());
    expect(fake.requests[0]?.headers.authorization).toBe(`Bearer ${KEY}`);
  });

  it("fails with PROVIDER_ERROR naming the variable when the key is missing, before any request", async () => {
    const err = await failure(driver({ home: "/srv/spar" }, {}).complete(request()));
    expect(err.code).toBe("PROVIDER_ERROR");
    expect(err.message).toBe(`openai: no API key: set ${KEY_ENV} in the environment or in /srv/spar/.env`);
    expect(err.extra.retryable).toBe(false);
    expect(fake.requests).toHaveLength(0);
  });

  it("maps a 500 to a retryable PROVIDER_ERROR with the provider's message and status, without retrying", async () => {
    fake.enqueue({ status: 500, error_message: "the engine is overloaded" });
    const err = await failure(driver().complete(request()));
    expect(err.code).toBe("PROVIDER_ERROR");
    expect(err.message).toBe("openai: 500 the engine is overloaded");
    expect(err.extra).toEqual({ provider: "openai", provider_status: 500, retryable: true });
    expect(fake.requests).toHaveLength(1);
  });

  it("reports a 429's retry-after for the kernel to honour", async () => {
    fake.enqueue({ status: 429, error_message: "slow down", headers: { "retry-after": "3" } });
    const err = await failure(driver().complete(request()));
    expect(err.extra).toEqual({
      provider: "openai",
      provider_status: 429,
      retryable: true,
      retry_after_s: 3,
    });
  });

  it("marks a 400 as not worth retrying", async () => {
    fake.enqueue({ status: 400, error_message: "bad request" });
    const err = await failure(driver().complete(request()));
    expect(err.extra.retryable).toBe(false);
  });

  it("never repeats the key in an error message", async () => {
    fake.enqueue({ status: 401, error_message: `Incorrect API key provided: ${KEY}` });
    const err = await failure(driver().complete(request()));
    expect(err.extra.provider_status).toBe(401);
    expect(err.message).not.toContain(KEY);
  });

  it("maps a truncated stream to PROVIDER_ERROR", async () => {
    fake.enqueue({ text: "this reply will be cut off somewhere in the middle", truncate_stream: true });
    const deltas: string[] = [];
    const err = await failure(driver().complete(request({ onDelta: (d) => deltas.push(d) })));
    expect(err.code).toBe("PROVIDER_ERROR");
    // undici's wording (its cause, "other side closed", is left unchecked across Node versions).
    expect(err.message).toMatch(/^openai: the connection broke mid-reply: terminated/);
    expect(deltas.length).toBeGreaterThan(0);
  });

  it("maps an abort to PROVIDER_ERROR", async () => {
    fake.enqueue({ text: "never seen", delay_ms: 5_000 });
    const err = await failure(driver().complete(request({ signal: AbortSignal.timeout(50) })));
    expect(err.code).toBe("PROVIDER_ERROR");
    expect(err.message).toBe("openai: Request was aborted.");
  });

  it("maps an abort mid-stream to PROVIDER_ERROR, not a short reply", async () => {
    fake.enqueue({ text: "one two three four five six seven eight" });
    const controller = new AbortController();
    const reply = driver().complete(
      request({ signal: controller.signal, onDelta: () => controller.abort() }),
    );
    const err = await failure(reply);
    expect(err.message).toBe("openai: Request was aborted.");
  });

  it("maps a refused connection to PROVIDER_ERROR", async () => {
    const gone = await startFakeOpenAI();
    await gone.close();
    const closed = createOpenAiDriver({ ...settings, base_url: gone.url }, { [KEY_ENV]: KEY });
    const err = await failure(closed.complete(request()));
    expect(err.code).toBe("PROVIDER_ERROR");
    expect(err.message).toMatch(/^openai: Connection error\. \(connect ECONNREFUSED /);
    expect(err.extra).toEqual({ provider: "openai", retryable: true });
  });
});

describe("openai_compatible", () => {
  it("talks to a server that takes no key, unless api_key_env names one", async () => {
    const local = createOpenAiDriver(
      { provider: "openai_compatible", model: "m", base_url: fake.url },
      {},
      {
        provider: "openai_compatible",
        keyOptional: true,
      },
    );
    expect((await local.complete(request())).text).toBe("echo: hi");
    expect(fake.requests[0]?.headers.authorization).toBe("Bearer no-key");

    const keyed = createOpenAiDriver(
      { provider: "openai_compatible", model: "m", base_url: fake.url, api_key_env: "GROQ_API_KEY" },
      {},
      { provider: "openai_compatible", keyOptional: true },
    );
    await expect(keyed.complete(request())).rejects.toThrow(
      "openai_compatible: no API key: set GROQ_API_KEY",
    );
  });
});

describe("openai driver probe", () => {
  it("lists models with the key, for spar doctor", async () => {
    expect(await driver().probe(AbortSignal.timeout(5000))).toBe("1 models listed");
  });

  it("names the missing variable", async () => {
    await expect(driver({}, {}).probe(AbortSignal.timeout(5000))).rejects.toThrow(KEY_ENV);
  });
});

describe("provider-openai plugin", () => {
  const applyPlugin = () => providerResolver(plugin);

  it("resolves openai and openai_compatible only, one driver per connection", async () => {
    const resolve = await applyPlugin();
    expect(await resolve({ provider: "anthropic", model: "claude" }, {})).toBeUndefined();
    expect(
      (await resolve({ provider: "openai_compatible", model: "x", base_url: fake.url }, {}))?.provider,
    ).toBe("openai_compatible");

    const a = await resolve({ provider: "openai", model: "gpt-a", base_url: fake.url }, {});
    const b = await resolve({ provider: "openai", model: "gpt-b", base_url: fake.url }, {});
    const other = await resolve(
      {
        provider: "openai",
        model: "gpt-a",
        base_url: fake.url,
      },
      { key_env: "OTHER_KEY", api_key: "other-key" },
    );
    expect(a?.provider).toBe("openai");
    expect(b).toBe(a);
    expect(other).not.toBe(a);
  });

  it("sends the key the kernel hands it, never one from the environment, and uses the request's model", async () => {
    vi.stubEnv("OPENAI_API_KEY", "env-key-that-must-never-be-sent");
    const resolve = await applyPlugin();
    const model: ModelSettings = { provider: "openai", model: "gpt-b", base_url: fake.url };
    const resolved = await resolve({ ...model, model: "gpt-a" }, { key_env: "OPENAI_API_KEY", api_key: KEY });
    const reply = await resolved?.complete(request({ model }));
    expect(reply?.text).toBe("echo: hi");
    expect(fake.requests[0]?.body?.model).toBe("gpt-b");
    expect(fake.requests[0]?.headers.authorization).toBe(`Bearer ${KEY}`);
  });

  it("fails for want of a key when the kernel hands it none, though the variable is set", async () => {
    vi.stubEnv("OPENAI_API_KEY", KEY);
    const resolve = await applyPlugin();
    const resolved = await resolve({ provider: "openai", model: "gpt-a", base_url: fake.url }, {});
    await expect(
      resolved?.complete(request({ model: { provider: "openai", model: "gpt-a" } })),
    ).rejects.toThrow("no API key");
    expect(fake.requests).toHaveLength(0);
  });
});
