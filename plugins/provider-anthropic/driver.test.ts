import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { readManifest } from "../../kernel/host/plugin-manifest.js";
import type { LlmRequest, ModelSettings, ToolDefinition } from "../../sdk/index.js";
import { KERNEL_VERSION } from "../../sdk/version.js";
import type { FakeAnthropic } from "../../test/fakes/anthropic-server.js";
import { startFakeAnthropic } from "../../test/fakes/anthropic-server.js";
import { chatRequest, providerResolver } from "../../test/helpers/provider.js";
import { createAnthropicDriver } from "./driver.js";
import plugin from "./index.js";

const KEY_ENV = "SPAR_TEST_ANTHROPIC_KEY";
const KEY = "sk-ant-test-0123456789abcdef";
const LOOKUP: ToolDefinition = {
  name: "lookup",
  description: "Looks a word up.",
  input_schema: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
};

let fake: FakeAnthropic;
let settings: ModelSettings;

beforeAll(async () => {
  fake = await startFakeAnthropic();
  settings = { provider: "anthropic", model: "claude-test", base_url: fake.url, api_key_env: KEY_ENV };
});
afterEach(() => {
  fake.reset();
  vi.unstubAllEnvs();
});
afterAll(() => fake.close());

function driver(env: NodeJS.ProcessEnv = { [KEY_ENV]: KEY }) {
  return createAnthropicDriver(settings, env);
}

function request(overrides: Partial<LlmRequest> = {}): LlmRequest {
  return chatRequest(settings, overrides);
}

describe("createAnthropicDriver", () => {
  it("returns a plain reply with usage, model and stop reason", async () => {
    fake.enqueue({
      text: "Hello there.",
      usage: { prompt_tokens: 12, completion_tokens: 4 },
      model: "claude-test-20250101",
    });
    const reply = await driver().complete(
      request({ model: { ...settings, max_tokens: 256, temperature: 0.2 } }),
    );
    expect(reply).toEqual({
      text: "Hello there.",
      tool_calls: [],
      usage: { input_tokens: 12, output_tokens: 4 },
      stop_reason: "end",
      model: "claude-test-20250101",
    });
    expect(fake.requests[0]?.body).toEqual({
      model: "claude-test",
      max_tokens: 256,
      system: "You are terse.",
      messages: [{ role: "user", content: "hi" }],
      temperature: 0.2,
      stream: false,
    });
  });

  it("always sends max_tokens, which the API requires, defaulting to 4096", async () => {
    await driver().complete(request());
    expect(fake.requests[0]?.body?.max_tokens).toBe(4096);
  });

  it("streams text deltas that join to the reply, with usage from message_start and message_delta", async () => {
    const text = "The quick brown fox jumps over the lazy dog.";
    fake.enqueue({ text, usage: { prompt_tokens: 20, completion_tokens: 10 } });
    const deltas: string[] = [];
    const reply = await driver().complete(request({ onDelta: (d) => deltas.push(d) }));
    expect(deltas.length).toBeGreaterThanOrEqual(3);
    expect(deltas.join("")).toBe(text);
    expect(reply).toEqual({
      text,
      tool_calls: [],
      usage: { input_tokens: 20, output_tokens: 10 },
      stop_reason: "end",
      model: "claude-test",
    });
    expect(fake.calls()[0]?.stream).toBe(true);
  });

  describe.each([
    ["non-streamed", undefined],
    ["streamed", () => {}],
  ])("tool use, %s", (_mode, onDelta) => {
    it("round-trips a call and its result", async () => {
      fake.enqueue({ tool_calls: [{ name: "lookup", arguments: { q: "sparring partner" } }] });
      const first = await driver().complete(request({ tools: [LOOKUP], onDelta }));
      expect(first).toMatchObject({ stop_reason: "tool_use", text: "" });
      const call = first.tool_calls[0];
      if (!call) throw new Error("no tool call");
      expect(first.tool_calls).toEqual([
        { id: expect.stringMatching(/^toolu_/), name: "lookup", arguments: { q: "sparring partner" } },
      ]);

      const final = await driver().complete(
        request({
          tools: [LOOKUP],
          onDelta,
          messages: [
            { role: "user", content: "hi" },
            { role: "assistant", content: "Looking.", tool_calls: first.tool_calls },
            { role: "tool", tool_call_id: call.id, name: "lookup", content: "a training opponent" },
          ],
        }),
      );
      expect(final).toMatchObject({ text: "done: a training opponent", stop_reason: "end", tool_calls: [] });

      const sent = fake.requests[1]?.body;
      expect(sent?.system).toBe("You are terse.");
      expect(sent?.tools).toEqual([
        { name: "lookup", description: "Looks a word up.", input_schema: LOOKUP.input_schema },
      ]);
      expect(sent?.messages).toEqual([
        { role: "user", content: "hi" },
        {
          role: "assistant",
          content: [
            { type: "text", text: "Looking." },
            { type: "tool_use", id: call.id, name: "lookup", input: { q: "sparring partner" } },
          ],
        },
        {
          role: "user",
          content: [{ type: "tool_result", tool_use_id: call.id, content: "a training opponent" }],
        },
      ]);
    });

    it("keeps invalid JSON input as raw_arguments", async () => {
      const raw = '{"q": "unterminated';
      fake.enqueue({ tool_calls: [{ name: "lookup", arguments: raw }] });
      const reply = await driver().complete(request({ tools: [LOOKUP], onDelta }));
      expect(reply.tool_calls).toEqual([
        { id: expect.any(String), name: "lookup", arguments: {}, raw_arguments: raw },
      ]);
    });
  });

  it("merges consecutive tool results into one user message, errors flagged", async () => {
    await driver().complete(
      request({
        tools: [LOOKUP],
        messages: [
          { role: "user", content: "look up two words" },
          {
            role: "assistant",
            content: "",
            tool_calls: [
              { id: "toolu_a", name: "lookup", arguments: { q: "jab" } },
              { id: "toolu_b", name: "lookup", arguments: { q: "hook" } },
            ],
          },
          { role: "tool", tool_call_id: "toolu_a", name: "lookup", content: "a quick punch" },
          { role: "tool", tool_call_id: "toolu_b", name: "lookup", content: "no such word", is_error: true },
        ],
      }),
    );
    const messages = fake.requests[0]?.body?.messages;
    expect(messages?.[1]?.content).toEqual([
      { type: "tool_use", id: "toolu_a", name: "lookup", input: { q: "jab" } },
      { type: "tool_use", id: "toolu_b", name: "lookup", input: { q: "hook" } },
    ]);
    expect(messages?.slice(2)).toEqual([
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "toolu_a", content: "a quick punch" },
          { type: "tool_result", tool_use_id: "toolu_b", content: "no such word", is_error: true },
        ],
      },
    ]);
    expect(fake.calls()[0]?.tool_results).toEqual(["a quick punch", "no such word"]);
  });

  it("accumulates several streamed tool_use blocks in order", async () => {
    fake.enqueue({
      text: "Two lookups.",
      tool_calls: [
        { name: "lookup", arguments: { q: "first" } },
        { name: "lookup", arguments: { q: "second" } },
      ],
    });
    const reply = await driver().complete(request({ tools: [LOOKUP], onDelta: () => {} }));
    expect(reply.text).toBe("Two lookups.");
    expect(reply.tool_calls.map((c) => c.arguments)).toEqual([{ q: "first" }, { q: "second" }]);
    expect(new Set(reply.tool_calls.map((c) => c.id)).size).toBe(2);
  });

  it("sends the key from the named variable (this SDK version sends it as a bearer token)", async () => {
    await driver().complete(request());
    expect(fake.requests[0]?.headers.authorization).toBe(`Bearer ${KEY}`);
  });
});

describe("anthropic driver probe", () => {
  it("lists models with the key, for spar doctor", async () => {
    expect(await driver().probe(AbortSignal.timeout(5000))).toBe("1 models listed");
  });

  it("names the missing variable", async () => {
    await expect(driver({}).probe(AbortSignal.timeout(5000))).rejects.toThrow(KEY_ENV);
  });
});

describe("provider-anthropic plugin", () => {
  const applyPlugin = () => providerResolver(plugin);

  it("has a manifest the kernel accepts", () => {
    const manifest = readManifest(dirname(fileURLToPath(import.meta.url)), KERNEL_VERSION);
    expect(manifest.contributes?.providers).toEqual([
      {
        id: "anthropic",
        key_env: ["ANTHROPIC_API_KEY"],
        context_windows: [{ match: "^claude", tokens: 200000 }],
        pricing: expect.arrayContaining([
          {
            model: "claude-sonnet-4-5",
            input_per_mtok: 3,
            output_per_mtok: 15,
            cached_input_per_mtok: 0.3,
            cache_write_per_mtok: 3.75,
            currency: "USD",
            as_of: "2026-11-28",
            source: "https://platform.claude.com/docs/en/about-claude/pricing",
          },
        ]),
      },
    ]);
  });

  it("resolves only provider anthropic, one driver per connection", async () => {
    const resolve = await applyPlugin();
    expect(await resolve({ provider: "openai", model: "gpt" }, {})).toBeUndefined();

    const a = await resolve({ provider: "anthropic", model: "claude-a", base_url: fake.url }, {});
    const b = await resolve({ provider: "anthropic", model: "claude-b", base_url: fake.url }, {});
    const other = await resolve(
      {
        provider: "anthropic",
        model: "claude-a",
        base_url: fake.url,
      },
      { key_env: "OTHER_KEY", api_key: "other-key" },
    );
    expect(a?.provider).toBe("anthropic");
    expect(b).toBe(a);
    expect(other).not.toBe(a);
  });

  it("sends the key the kernel hands it, never one from the environment, and uses the request's model", async () => {
    vi.stubEnv("ANTHROPIC_API_KEY", "env-key-that-must-never-be-sent");
    const resolve = await applyPlugin();
    const model: ModelSettings = { provider: "anthropic", model: "claude-b", base_url: fake.url };
    const resolved = await resolve(
      { ...model, model: "claude-a" },
      { key_env: "ANTHROPIC_API_KEY", api_key: KEY },
    );
    const reply = await resolved?.complete(request({ model }));
    expect(reply?.text).toBe("echo: hi");
    expect(fake.requests[0]?.body?.model).toBe("claude-b");
    expect(fake.requests[0]?.headers.authorization).toBe(`Bearer ${KEY}`);
  });

  it("fails for want of a key when the kernel hands it none, though the variable is set", async () => {
    vi.stubEnv("ANTHROPIC_API_KEY", KEY);
    const resolve = await applyPlugin();
    const resolved = await resolve({ provider: "anthropic", model: "claude-a", base_url: fake.url }, {});
    await expect(
      resolved?.complete(request({ model: { provider: "anthropic", model: "claude-a" } })),
    ).rejects.toThrow("no API key");
    expect(fake.requests).toHaveLength(0);
  });
});
