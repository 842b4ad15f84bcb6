import { readFileSync } from "node:fs";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { LlmRequest, ModelSettings, ToolDefinition } from "../../sdk/index.js";
import { validatorFor } from "../../sdk/index.js";
import type { FakeOllama } from "../../test/fakes/ollama-server.js";
import { startFakeOllama } from "../../test/fakes/ollama-server.js";
import { chatRequest, providerResolver } from "../../test/helpers/provider.js";
import { createOllamaDriver } from "./driver.js";
import plugin from "./index.js";

const LOOKUP: ToolDefinition = {
  name: "lookup",
  description: "Looks a word up.",
  input_schema: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
};

let fake: FakeOllama;
let settings: ModelSettings;

beforeAll(async () => {
  fake = await startFakeOllama();
  settings = { provider: "ollama", model: "llama-test", base_url: fake.url };
});
afterEach(() => fake.reset());
afterAll(() => fake.close());

function request(overrides: Partial<LlmRequest> = {}): LlmRequest {
  return chatRequest(settings, overrides);
}

describe("createOllamaDriver", () => {
  it("returns a plain reply with usage, model and stop reason, unstreamed", async () => {
    fake.enqueue({
      text: "Hello there.",
      usage: { prompt_tokens: 12, completion_tokens: 4 },
      model: "llama:8b",
    });
    const reply = await createOllamaDriver(settings).complete(
      request({ model: { ...settings, max_tokens: 256, temperature: 0.2 } }),
    );
    expect(reply).toEqual({
      text: "Hello there.",
      tool_calls: [],
      usage: { input_tokens: 12, output_tokens: 4 },
      stop_reason: "end",
      model: "llama:8b",
    });
    expect(fake.requests[0]?.body).toEqual({
      model: "llama-test",
      messages: [
        { role: "system", content: "You are terse." },
        { role: "user", content: "hi" },
      ],
      options: { num_predict: 256, temperature: 0.2 },
      stream: false,
    });
    expect(fake.requests[0]?.headers.authorization).toBeUndefined();
  });

  it("streams text deltas that join to the reply, with usage from the done line", async () => {
    const text = "The quick brown fox jumps over the lazy dog.";
    fake.enqueue({ text, usage: { prompt_tokens: 20, completion_tokens: 10 } });
    const deltas: string[] = [];
    const reply = await createOllamaDriver(settings).complete(request({ onDelta: (d) => deltas.push(d) }));
    expect(deltas.length).toBeGreaterThanOrEqual(3);
    expect(deltas.join("")).toBe(text);
    expect(reply).toEqual({
      text,
      tool_calls: [],
      usage: { input_tokens: 20, output_tokens: 10 },
      stop_reason: "end",
      model: "llama-test",
    });
    expect(fake.calls()[0]?.stream).toBe(true);
    expect(fake.requests[0]?.body && "options" in fake.requests[0].body).toBe(false);
  });

  describe.each([
    ["non-streamed", undefined],
    ["streamed", () => {}],
  ])("tool calls, %s", (_mode, onDelta) => {
    it("round-trips a call and its result", async () => {
      fake.enqueue({ tool_calls: [{ name: "lookup", arguments: { q: "sparring partner" } }] });
      const driver = createOllamaDriver(settings);
      const first = await driver.complete(request({ tools: [LOOKUP], onDelta }));
      expect(first).toMatchObject({ text: "", stop_reason: "tool_use" });
      const call = first.tool_calls[0];
      if (!call) throw new Error("no tool call");
      // Ollama sends no ids: the driver makes one for the agent loop to pair the result with.
      expect(call).toEqual({
        id: expect.stringMatching(/^call_[0-9a-f-]{36}$/),
        name: "lookup",
        arguments: { q: "sparring partner" },
      });

      const final = await driver.complete(
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
          content: "",
          tool_calls: [{ function: { name: "lookup", arguments: { q: "sparring partner" } } }],
        },
        { role: "tool", content: "a training opponent", tool_name: "lookup" },
      ]);
      expect(sent?.tools).toEqual([
        {
          type: "function",
          function: { name: "lookup", description: "Looks a word up.", parameters: LOOKUP.input_schema },
        },
      ]);
      expect(fake.calls()[1]).toMatchObject({
        system: "You are terse.",
        tool_results: ["a training opponent"],
      });
    });

    it("parses string arguments, and keeps invalid ones as raw_arguments", async () => {
      const raw = '{"q": "unterminated';
      fake.enqueue({
        tool_calls: [
          { name: "lookup", arguments: '{"q":"as text"}' },
          { name: "lookup", arguments: raw },
        ],
      });
      const reply = await createOllamaDriver(settings).complete(request({ tools: [LOOKUP], onDelta }));
      expect(reply.tool_calls).toEqual([
        { id: expect.any(String), name: "lookup", arguments: { q: "as text" } },
        { id: expect.any(String), name: "lookup", arguments: {}, raw_arguments: raw },
      ]);
      expect(new Set(reply.tool_calls.map((c) => c.id)).size).toBe(2);
    });
  });

  it("sends the key from api_key_env as a bearer token, and nothing when the variable is unset", async () => {
    const keyed = { ...settings, api_key_env: "SPAR_TEST_OLLAMA_KEY" };
    await createOllamaDriver(keyed, { env: { SPAR_TEST_OLLAMA_KEY: "olk-123" } }).complete(request());
    await createOllamaDriver(keyed, { env: {} }).complete(request());
    expect(fake.requests.map((r) => r.headers.authorization)).toEqual(["Bearer olk-123", undefined]);
  });

  it("sends every request through the given fetch", async () => {
    const seen: string[] = [];
    const spy: typeof fetch = (input, init) => {
      seen.push(String(input));
      return fetch(input, init);
    };
    const driver = createOllamaDriver(settings, { fetch: spy });
    await driver.complete(request());
    await driver.probe(AbortSignal.timeout(5_000));
    expect(seen).toEqual([`${fake.url}/api/chat`, `${fake.url}/api/tags`]);
  });

  it("probes by listing the installed models", async () => {
    expect(await createOllamaDriver(settings).probe(AbortSignal.timeout(5_000))).toBe("1 models installed");
  });
});

describe("provider-ollama plugin", () => {
  const applyPlugin = () => providerResolver(plugin);

  it("has a manifest that validates against plugin.schema.json", () => {
    const schema = JSON.parse(
      readFileSync(new URL("../../plugin.schema.json", import.meta.url), "utf8"),
    ) as object;
    const manifest: unknown = JSON.parse(readFileSync(new URL("./plugin.json", import.meta.url), "utf8"));
    const validate = validatorFor(schema);
    expect(validate(manifest), JSON.stringify(validate.errors)).toBe(true);
  });

  it("resolves only provider ollama, one driver per host and key variable", async () => {
    const resolve = await applyPlugin();
    expect(await resolve({ provider: "openai", model: "gpt" }, {})).toBeUndefined();
    expect(
      await resolve({ provider: "openai_compatible", model: "x", base_url: fake.url }, {}),
    ).toBeUndefined();

    const a = await resolve({ provider: "ollama", model: "llama-a", base_url: fake.url }, {});
    const b = await resolve({ provider: "ollama", model: "llama-b", base_url: fake.url }, {});
    const keyed = await resolve(
      {
        provider: "ollama",
        model: "llama-a",
        base_url: fake.url,
      },
      { key_env: "K", api_key: "other-key" },
    );
    const local = await resolve({ provider: "ollama", model: "llama-a" }, {});
    expect(a?.provider).toBe("ollama");
    expect(b).toBe(a);
    expect(keyed).not.toBe(a);
    expect(local).not.toBe(a);
  });

  it("gives a driver that uses the request's model", async () => {
    const resolve = await applyPlugin();
    const model: ModelSettings = { provider: "ollama", model: "llama-b", base_url: fake.url };
    const resolved = await resolve({ ...model, model: "llama-a" }, {});
    const reply = await resolved?.complete(request({ model }));
    expect(reply?.text).toBe("echo: hi");
    expect(fake.calls()[0]?.model).toBe("llama-b");
  });
});

describe("default host", () => {
  it("is the local runner's port when base_url is unset", async () => {
    const seen: string[] = [];
    const refuse: typeof fetch = async (input) => {
      seen.push(String(input));
      throw new TypeError("fetch failed");
    };
    await expect(
      createOllamaDriver({ provider: "ollama", model: "m" }, { fetch: refuse }).complete(request()),
    ).rejects.toThrow("cannot reach the local runner at http://127.0.0.1:11434");
    expect(seen).toEqual(["http://127.0.0.1:11434/api/chat"]);
  });
});
