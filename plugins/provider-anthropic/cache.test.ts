import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ChatMessage, CONTEXT_HEADING, type LlmRequest } from "../../sdk/index.js";
import { type FakeAnthropic, startFakeAnthropic } from "../../test/fakes/anthropic-server.js";
import { MAX_BREAKPOINTS } from "./cache.js";
import { createAnthropicDriver } from "./driver.js";
import { requestBody } from "./wire.js";

const STABLE = "You are a careful helper.\n\n## Creed of spar\nIdentity: helps.";
const VOLATILE = "\n\n## Creed of spar, lately\nHistory: 3 conversation(s), 6 message(s), 1 bout(s)";
const TOOL = { name: "lookup", description: "Looks up.", input_schema: { type: "object", properties: {} } };

function request(messages: ChatMessage[], overrides: Partial<LlmRequest> = {}): LlmRequest {
  return {
    model: { provider: "anthropic", model: "claude-sonnet-4-5" },
    system: STABLE + VOLATILE,
    messages,
    tools: [TOOL],
    cache: { key: "spar-k", stable_chars: STABLE.length },
    ...overrides,
  };
}

/** Every cache_control in a body, by where it is. */
function breakpoints(body: unknown, at = ""): string[] {
  if (Array.isArray(body)) return body.flatMap((v, i) => breakpoints(v, `${at}[${i}]`));
  if (typeof body !== "object" || body === null) return [];
  return Object.entries(body).flatMap(([k, v]) =>
    k === "cache_control" ? [at] : breakpoints(v, at ? `${at}.${k}` : k),
  );
}

const conversation: ChatMessage[] = [
  { role: "user", content: "first" },
  { role: "assistant", content: "", tool_calls: [{ id: "t1", name: "lookup", arguments: {} }] },
  { role: "tool", tool_call_id: "t1", name: "lookup", content: "one" },
  { role: "assistant", content: "answer one" },
  { role: "user", content: "second" },
  { role: "assistant", content: "", tool_calls: [{ id: "t2", name: "lookup", arguments: {} }] },
  { role: "tool", tool_call_id: "t2", name: "lookup", content: "two" },
];

describe("Anthropic prompt cache breakpoints", () => {
  it("marks the stable system block, the message before the turn's user message, and the last", () => {
    const body = requestBody(request(conversation));
    expect(body.system).toEqual([
      { type: "text", text: STABLE, cache_control: { type: "ephemeral" } },
      { type: "text", text: VOLATILE },
    ]);
    expect(breakpoints(body).sort()).toEqual([
      "messages[3].content[0]",
      "messages[6].content[0]",
      "system[0]",
    ]);
    expect(breakpoints(body).length).toBeLessThanOrEqual(MAX_BREAKPOINTS);
    // The tool result keeps its shape, marked.
    expect(body.messages[6]?.content).toEqual([
      { type: "tool_result", tool_use_id: "t2", content: "two", cache_control: { type: "ephemeral" } },
    ]);
  });

  it("marks the first user message alone on a bout's first call, and the last tool without stable text", () => {
    const body = requestBody(
      request([{ role: "user", content: "hi" }], { cache: { key: "k", stable_chars: 0 } }),
    );
    expect(body.system).toEqual([{ type: "text", text: STABLE + VOLATILE }]);
    expect(breakpoints(body).sort()).toEqual(["messages[0].content[0]", "tools[0]"]);
  });

  it("puts the turn's context at the head of its user message, and marks the message before it", () => {
    const context = `${CONTEXT_HEADING}\nHistory: 3 conversation(s)`;
    const body = requestBody(request(conversation, { system: STABLE, context, turn_start: 4 }));
    expect(body.system).toEqual([{ type: "text", text: STABLE, cache_control: { type: "ephemeral" } }]);
    expect(body.messages[4]).toEqual({
      role: "user",
      content: [
        { type: "text", text: context },
        { type: "text", text: "second" },
      ],
    });
    // The history before the context (through messages[3]) and the turn so far are each a prefix.
    expect(breakpoints(body).sort()).toEqual([
      "messages[3].content[0]",
      "messages[6].content[0]",
      "system[0]",
    ]);
    // The turn's first call: its user message is the last, marked after the context block.
    const first = requestBody(request(conversation.slice(0, 5), { system: STABLE, context, turn_start: 4 }));
    expect(breakpoints(first).sort()).toEqual([
      "messages[3].content[0]",
      "messages[4].content[1]",
      "system[0]",
    ]);
  });

  it("sends the body as before when the cache is off", () => {
    const body = requestBody(request(conversation, { cache: undefined }));
    expect(breakpoints(body)).toEqual([]);
    expect(body.system).toBe(STABLE + VOLATILE);
  });

  describe("against the fake, which caches as the API does", () => {
    let fake: FakeAnthropic;
    beforeAll(async () => {
      fake = await startFakeAnthropic();
    });
    afterAll(() => fake.close());

    it("writes the prefix on the first call and reads it on the next", async () => {
      const long = `${STABLE}\n${"Keep answers short and exact. ".repeat(200)}`;
      const settings = { provider: "anthropic", model: "claude-sonnet-4-5", base_url: fake.url };
      const driver = createAnthropicDriver(settings, { ANTHROPIC_API_KEY: "sk-ant-unit" });
      const ask = (messages: ChatMessage[]) =>
        driver.complete({
          ...request(messages),
          model: settings,
          system: long,
          cache: { key: "k", stable_chars: long.length },
        });
      const first = await ask([{ role: "user", content: "hi" }]);
      expect(first.usage.cached_tokens).toBeUndefined();
      expect(first.usage.cache_write_tokens).toBeGreaterThan(1024);
      const second = await ask([
        { role: "user", content: "hi" },
        { role: "assistant", content: first.text },
        { role: "user", content: "again" },
      ]);
      // Everything up to the first message was written by the first call.
      expect(second.usage.cached_tokens).toBe(first.usage.cache_write_tokens);
      expect(second.usage.input_tokens).toBeGreaterThan(second.usage.cached_tokens ?? 0);
    });
  });
});
