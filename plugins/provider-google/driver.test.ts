import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import type { LlmRequest, ModelSettings, ToolDefinition } from "../../sdk/index.js";
import type { FakeGemini } from "../../test/fakes/gemini-server.js";
import { startFakeGemini } from "../../test/fakes/gemini-server.js";
import { chatRequest, failure, providerResolver } from "../../test/helpers/provider.js";
import { createGoogleDriver, type GoogleDriverOptions } from "./driver.js";
import plugin from "./index.js";
import { stopReason, UNKNOWN_SIGNATURE, usageOf } from "./wire.js";

const KEY_ENV = "SPAR_TEST_GEMINI_KEY";
const KEY = "AIzaTest0123456789abcdef";
const LOOKUP: ToolDefinition = {
  name: "lookup",
  description: "Looks a word up.",
  input_schema: {
    type: "object",
    properties: { q: { type: "string" } },
    required: ["q"],
    additionalProperties: false,
  },
};

let fake: FakeGemini;
let settings: ModelSettings;

beforeAll(async () => {
  fake = await startFakeGemini();
  settings = { provider: "google", model: "gemini-test", base_url: fake.url, api_key_env: KEY_ENV };
});
afterEach(() => {
  fake.reset();
  vi.unstubAllEnvs();
});
afterAll(() => fake.close());

// The driver never retries: retries and the deadline belong to the kernel (kernel/provider-call.ts).
function driver(
  options: GoogleDriverOptions = {},
  env: NodeJS.ProcessEnv = { [KEY_ENV]: KEY },
  connection: ModelSettings = settings,
) {
  return createGoogleDriver(connection, env, options);
}

function request(overrides: Partial<LlmRequest> = {}): LlmRequest {
  return chatRequest(settings, overrides);
}

describe("createGoogleDriver", () => {
  it("returns a plain reply with usage, model and stop reason", async () => {
    fake.enqueue({
      text: "Hello there.",
      usage: { prompt_tokens: 12, completion_tokens: 4 },
      model: "gemini-v2",
    });
    const reply = await driver().complete(
      request({ model: { ...settings, max_tokens: 256, temperature: 0.2 } }),
    );
    expect(reply).toEqual({
      text: "Hello there.",
      tool_calls: [],
      usage: { input_tokens: 12, output_tokens: 4 },
      stop_reason: "end",
      model: "gemini-v2",
    });
    const sent = fake.requests[0];
    expect(sent?.path).toBe("/v1beta/models/gemini-test:generateContent");
    expect(sent?.body).toEqual({
      contents: [{ role: "user", parts: [{ text: "hi" }] }],
      systemInstruction: { parts: [{ text: "You are terse." }] },
      generationConfig: { maxOutputTokens: 256, temperature: 0.2 },
    });
  });

  it("streams text deltas that join to the reply, with usage from the last chunk", async () => {
    const text = "The quick brown fox jumps over the lazy dog.";
    fake.enqueue({ text, usage: { prompt_tokens: 20, completion_tokens: 10 } });
    const deltas: string[] = [];
    const reply = await driver().complete(request({ onDelta: (d) => deltas.push(d) }));
    expect(deltas.length).toBeGreaterThanOrEqual(3);
    expect(deltas).not.toContain("");
    expect(deltas.join("")).toBe(text);
    expect(reply).toEqual({
      text,
      tool_calls: [],
      usage: { input_tokens: 20, output_tokens: 10 },
      stop_reason: "end",
      model: "gemini-test",
    });
    expect(fake.requests[0]?.path).toBe("/v1beta/models/gemini-test:streamGenerateContent?alt=sse");
  });

  describe.each([
    ["non-streamed", undefined],
    ["streamed", () => {}],
  ])("function calls, %s", (_mode, onDelta) => {
    it("round-trips a call and its result, replaying the call's thought signature", async () => {
      const google = driver();
      fake.enqueue({ tool_calls: [{ name: "lookup", arguments: { q: "sparring partner" } }] });
      const first = await google.complete(request({ tools: [LOOKUP], onDelta }));
      expect(first.stop_reason).toBe("tool_use");
      expect(first.text).toBe("");
      const call = first.tool_calls[0];
      if (!call) throw new Error("no tool call");
      expect(first.tool_calls).toEqual([
        {
          id: expect.stringMatching(/^call_[0-9a-f-]{36}$/),
          name: "lookup",
          arguments: { q: "sparring partner" },
        },
      ]);
      const declared = fake.requests[0]?.body?.tools;
      expect(declared).toEqual([
        {
          functionDeclarations: [
            { name: "lookup", description: "Looks a word up.", parametersJsonSchema: LOOKUP.input_schema },
          ],
        },
      ]);

      const final = await google.complete(
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
      expect(final).toMatchObject({
        text: 'done: {"result":"a training opponent"}',
        stop_reason: "end",
        tool_calls: [],
      });
      expect(fake.requests[1]?.body?.contents).toEqual([
        { role: "user", parts: [{ text: "hi" }] },
        {
          role: "model",
          parts: [
            {
              functionCall: { id: call.id, name: "lookup", args: { q: "sparring partner" } },
              // The fake's random signature (base64 of 24 bytes), not the stand-in.
              thoughtSignature: expect.stringMatching(/^[A-Za-z0-9+/]{32}$/),
            },
          ],
        },
        {
          role: "user",
          parts: [
            {
              functionResponse: { id: call.id, name: "lookup", response: { result: "a training opponent" } },
            },
          ],
        },
      ]);
      expect(fake.calls()[1]).toMatchObject({
        system: "You are terse.",
        tools: ["lookup"],
        tool_results: ['{"result":"a training opponent"}'],
        stream: onDelta !== undefined,
      });
    });
  });

  it("sends the results of parallel calls in one content; a call it never saw gets the stand-in signature", async () => {
    await driver().complete(
      request({
        messages: [
          { role: "user", content: "compare" },
          {
            role: "assistant",
            content: "Looking both up.",
            tool_calls: [
              { id: "c1", name: "lookup", arguments: { q: "jab" } },
              { id: "c2", name: "lookup", arguments: { q: "hook" } },
            ],
          },
          { role: "tool", tool_call_id: "c1", name: "lookup", content: '{"meaning":"a quick punch"}' },
          { role: "tool", tool_call_id: "c2", name: "lookup", content: "no such word", is_error: true },
        ],
      }),
    );
    expect(fake.requests[0]?.body?.contents.slice(1)).toEqual([
      {
        role: "model",
        parts: [
          { text: "Looking both up." },
          {
            functionCall: { id: "c1", name: "lookup", args: { q: "jab" } },
            thoughtSignature: UNKNOWN_SIGNATURE,
          },
          { functionCall: { id: "c2", name: "lookup", args: { q: "hook" } } },
        ],
      },
      {
        role: "user",
        parts: [
          { functionResponse: { id: "c1", name: "lookup", response: { meaning: "a quick punch" } } },
          { functionResponse: { id: "c2", name: "lookup", response: { error: "no such word" } } },
        ],
      },
    ]);
  });

  it("sends the key in x-goog-api-key, from the named variable", async () => {
    await driver().complete(request());
    expect(fake.requests[0]?.headers["x-goog-api-key"]).toBe(KEY);
  });

  it("reads GEMINI_API_KEY, then GOOGLE_API_KEY, when no variable is named", async () => {
    const unnamed = { ...settings, api_key_env: undefined };
    await driver({}, { GOOGLE_API_KEY: "google-key" }, unnamed).complete(request());
    await driver({}, { GOOGLE_API_KEY: "google-key", GEMINI_API_KEY: "gemini-key" }, unnamed).complete(
      request(),
    );
    expect(fake.requests.map((r) => r.headers["x-goog-api-key"])).toEqual(["google-key", "gemini-key"]);
  });

  it("fails with a non-retryable PROVIDER_ERROR naming the variables when the key is missing", async () => {
    const unnamed = { ...settings, api_key_env: undefined };
    const err = await failure(driver({ home: "/srv/spar" }, {}, unnamed).complete(request()));
    expect(err.code).toBe("PROVIDER_ERROR");
    expect(err.message).toBe(
      "google: no API key: set GEMINI_API_KEY or GOOGLE_API_KEY in the environment or in /srv/spar/.env",
    );
    expect(err.extra).toEqual({ provider: "google", retryable: false });
    const named = await failure(driver({}, { GEMINI_API_KEY: KEY }).complete(request()));
    expect(named.message).toContain(`set ${KEY_ENV} in the environment or in <data dir>/.env`);
    expect(fake.requests).toHaveLength(0);
  });

  it.each([
    ["non-streamed", undefined],
    ["streamed", () => {}],
  ])(
    "maps a 500 to a retryable PROVIDER_ERROR with the provider's message and status, requested once (%s)",
    async (_mode, onDelta) => {
      fake.enqueue({ status: 500, error_message: "the engine is overloaded" });
      const err = await failure(driver().complete(request({ onDelta })));
      expect(err.code).toBe("PROVIDER_ERROR");
      expect(err.message).toBe("google: 500 INTERNAL: the engine is overloaded");
      expect(err.extra).toEqual({ provider: "google", provider_status: 500, retryable: true });
      expect(fake.requests).toHaveLength(1);
    },
  );

  it("reports a 429's wait (RetryInfo in the body) for the kernel to honour", async () => {
    fake.enqueue({ status: 429, error_message: "slow down", headers: { "retry-after": "3" } });
    const err = await failure(driver().complete(request()));
    expect(err.extra).toEqual({
      provider: "google",
      provider_status: 429,
      retryable: true,
      retry_after_s: 3,
    });
    expect(fake.requests).toHaveLength(1);
  });

  it("marks a 400 as not worth retrying", async () => {
    fake.enqueue({ status: 400, error_message: "bad request" });
    const err = await failure(driver().complete(request()));
    expect(err.message).toBe("google: 400 INVALID_ARGUMENT: bad request");
    expect(err.extra.retryable).toBe(false);
  });

  it("never repeats the key in an error message", async () => {
    fake.enqueue({ status: 401, error_message: `API key not valid: ${KEY}` });
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
    expect(err.message).toMatch(/^google: the connection broke mid-reply: terminated/);
    expect(err.extra.retryable).toBe(true);
    expect(deltas.length).toBeGreaterThan(0);
  });

  it.each([
    ["non-streamed", undefined],
    ["streamed", () => {}],
  ])("maps a malformed reply to PROVIDER_ERROR (%s)", async (_mode, onDelta) => {
    fake.enqueue({ malformed: true });
    const err = await failure(driver().complete(request({ onDelta })));
    expect(err.code).toBe("PROVIDER_ERROR");
    expect(err.message).toMatch(/^google: the reply was not valid JSON: /);
  });

  it("maps an abort to PROVIDER_ERROR", async () => {
    fake.enqueue({ text: "never seen", delay_ms: 5_000 });
    const err = await failure(driver().complete(request({ signal: AbortSignal.timeout(50) })));
    expect(err.code).toBe("PROVIDER_ERROR");
    expect(err.message).toBe("google: the request was aborted");
  });

  it("maps an abort mid-stream to PROVIDER_ERROR, not a short reply", async () => {
    fake.enqueue({ text: "one two three four five six seven eight" });
    const controller = new AbortController();
    const reply = driver().complete(
      request({ signal: controller.signal, onDelta: () => controller.abort() }),
    );
    const err = await failure(reply);
    expect(err.message).toBe("google: the request was aborted");
  });

  it("maps a refused connection to a retryable PROVIDER_ERROR", async () => {
    const gone = await startFakeGemini();
    await gone.close();
    const err = await failure(driver({}, undefined, { ...settings, base_url: gone.url }).complete(request()));
    expect(err.code).toBe("PROVIDER_ERROR");
    expect(err.message).toMatch(/^google: connection error: fetch failed \(connect ECONNREFUSED /);
    expect(err.extra).toEqual({ provider: "google", retryable: true });
  });
});

describe("wire mapping", () => {
  it("counts thinking tokens as output and maps finish reasons", () => {
    expect(usageOf({ promptTokenCount: 5, candidatesTokenCount: 3, thoughtsTokenCount: 10 })).toEqual({
      input_tokens: 5,
      output_tokens: 13,
    });
    expect(usageOf(undefined)).toEqual({ input_tokens: 0, output_tokens: 0 });
    expect(["STOP", "MAX_TOKENS", "SAFETY", undefined].map((f) => stopReason(f, false))).toEqual([
      "end",
      "max_tokens",
      "other",
      "other",
    ]);
    expect(stopReason("STOP", true)).toBe("tool_use");
  });
});

describe("google driver probe", () => {
  it("lists models with the key, for spar doctor", async () => {
    expect(await driver().probe(AbortSignal.timeout(5000))).toBe("1 models listed");
  });

  it("names the missing variable", async () => {
    await expect(driver({}, {}).probe(AbortSignal.timeout(5000))).rejects.toThrow(KEY_ENV);
  });
});

describe("provider-google plugin", () => {
  const applyPlugin = () => providerResolver(plugin);

  it("resolves only provider google, one driver per connection", async () => {
    const resolve = await applyPlugin();
    expect(await resolve({ provider: "openai", model: "gpt" }, {})).toBeUndefined();
    expect(await resolve({ provider: "gemini", model: "gemini-x" }, {})).toBeUndefined();

    const a = await resolve({ provider: "google", model: "gemini-a", base_url: fake.url }, {});
    const b = await resolve({ provider: "google", model: "gemini-b", base_url: fake.url }, {});
    const other = await resolve(
      {
        provider: "google",
        model: "gemini-a",
        base_url: fake.url,
      },
      { key_env: "K2", api_key: "other-key" },
    );
    expect(a?.provider).toBe("google");
    expect(b).toBe(a);
    expect(other).not.toBe(a);
  });

  it("sends the key the kernel hands it, never one from the environment, and uses the request's model", async () => {
    vi.stubEnv("GEMINI_API_KEY", "env-key-that-must-never-be-sent");
    const resolve = await applyPlugin();
    const model: ModelSettings = { provider: "google", model: "gemini-b", base_url: fake.url };
    const resolved = await resolve(
      { ...model, model: "gemini-a" },
      { key_env: "GEMINI_API_KEY", api_key: KEY },
    );
    const reply = await resolved?.complete(request({ model }));
    expect(reply?.text).toBe("echo: hi");
    expect(fake.requests[0]?.path).toBe("/v1beta/models/gemini-b:generateContent");
    expect(fake.requests[0]?.headers["x-goog-api-key"]).toBe(KEY);
  });

  it("fails for want of a key when the kernel hands it none, though the variable is set", async () => {
    vi.stubEnv("GEMINI_API_KEY", KEY);
    const resolve = await applyPlugin();
    const resolved = await resolve({ provider: "google", model: "gemini-a", base_url: fake.url }, {});
    await expect(
      resolved?.complete(request({ model: { provider: "google", model: "gemini-a" } })),
    ).rejects.toThrow("no API key");
    expect(fake.requests).toHaveLength(0);
  });
});
