import Anthropic from "@anthropic-ai/sdk";
import type { MessageParam, RawMessageStreamEvent, Tool } from "@anthropic-ai/sdk/resources/messages";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { FakeAnthropic } from "./anthropic-server.js";
import { startFakeAnthropic } from "./anthropic-server.js";

const WEATHER_TOOL: Tool = {
  name: "get_weather",
  description: "Weather for a city",
  input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};

async function caught(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error("expected the promise to reject");
}

describe("fake Anthropic server", () => {
  let fake: FakeAnthropic;
  let client: Anthropic;

  beforeAll(async () => {
    fake = await startFakeAnthropic();
    client = new Anthropic({ apiKey: "test-key", baseURL: fake.url, maxRetries: 0 });
  });
  afterAll(() => fake.close());
  beforeEach(() => fake.reset());

  it("answers a scripted plain reply with its usage and the requested model", async () => {
    fake.enqueue({ text: "Hello there", usage: { prompt_tokens: 11, completion_tokens: 7 } });
    const res = await client.messages.create({
      model: "claude-test",
      max_tokens: 64,
      system: "You are terse.",
      messages: [{ role: "user", content: "hi" }],
    });
    expect(fake.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(res.id).toMatch(/^msg_/);
    expect(res).toMatchObject({ type: "message", role: "assistant", model: "claude-test" });
    expect(res.content).toEqual([{ type: "text", text: "Hello there" }]);
    expect(res.stop_reason).toBe("end_turn");
    expect(res.usage).toEqual({
      input_tokens: 11,
      output_tokens: 7,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    });
    expect(fake.calls()).toEqual([
      {
        model: "claude-test",
        system: "You are terse.",
        tools: [],
        last_user_text: "hi",
        context: "",
        transcript: ["You are terse.", "hi"],
        tool_results: [],
        stream: false,
      },
    ]);
  });

  it("records the path and the SDK's auth header (a bearer token in this SDK version)", async () => {
    await client.messages.create({ model: "m", max_tokens: 8, messages: [{ role: "user", content: "x" }] });
    const recorded = fake.requests[0];
    expect(recorded?.method).toBe("POST");
    expect(recorded?.path).toBe("/v1/messages");
    expect(recorded?.headers.authorization).toBe("Bearer test-key");
    expect(recorded?.headers["anthropic-version"]).toEqual(expect.any(String));
  });

  it("streams named events whose text deltas join to the reply", async () => {
    fake.enqueue({ text: "the quick brown fox jumps", usage: { prompt_tokens: 5, completion_tokens: 6 } });
    const stream = await client.messages.create({
      model: "m",
      max_tokens: 64,
      messages: [{ role: "user", content: "go" }],
      stream: true,
    });
    const events: RawMessageStreamEvent[] = [];
    for await (const event of stream) events.push(event);

    expect(events[0]).toMatchObject({ type: "message_start", message: { usage: { input_tokens: 5 } } });
    const pieces = events.flatMap((e) =>
      e.type === "content_block_delta" && e.delta.type === "text_delta" ? [e.delta.text] : [],
    );
    expect(pieces.length).toBeGreaterThanOrEqual(3);
    expect(pieces.join("")).toBe("the quick brown fox jumps");
    expect(events.at(-2)).toMatchObject({
      type: "message_delta",
      delta: { stop_reason: "end_turn" },
      usage: { output_tokens: 6 },
    });
    expect(events.at(-1)).toEqual({ type: "message_stop" });
    expect(fake.calls()[0]?.stream).toBe(true);
  });

  it("streams a tool_use block in input_json_delta pieces the SDK's helper reassembles", async () => {
    fake.enqueue({ text: "Checking.", tool_calls: [{ name: "get_weather", arguments: { city: "Oslo" } }] });
    const stream = client.messages.stream({
      model: "m",
      max_tokens: 64,
      messages: [{ role: "user", content: "weather?" }],
      tools: [WEATHER_TOOL],
    });
    let jsonPieces = 0;
    stream.on("streamEvent", (e) => {
      if (e.type === "content_block_delta" && e.delta.type === "input_json_delta") jsonPieces++;
    });
    const final = await stream.finalMessage();
    expect(jsonPieces).toBeGreaterThanOrEqual(2);
    expect(final.stop_reason).toBe("tool_use");
    expect(final.content).toMatchObject([
      { type: "text", text: "Checking." },
      {
        type: "tool_use",
        id: expect.stringMatching(/^toolu_/),
        name: "get_weather",
        input: { city: "Oslo" },
      },
    ]);
  });

  it("returns a tool_use block and finishes the round trip from the tool_result by default", async () => {
    fake.enqueue({ tool_calls: [{ name: "get_weather", arguments: { city: "Reykjavik" } }] });
    const messages: MessageParam[] = [{ role: "user", content: "weather in Reykjavik?" }];
    const first = await client.messages.create({
      model: "m",
      max_tokens: 64,
      messages,
      tools: [WEATHER_TOOL],
    });
    expect(first.stop_reason).toBe("tool_use");
    const use = first.content[0];
    if (use?.type !== "tool_use") throw new Error("expected a tool_use block");
    expect(use.input).toEqual({ city: "Reykjavik" });

    messages.push(
      { role: "assistant", content: first.content.map((b) => (b.type === "tool_use" ? { ...b } : b)) },
      { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "4C and windy" }] },
    );
    const done = await client.messages.create({
      model: "m",
      max_tokens: 64,
      messages,
      tools: [WEATHER_TOOL],
    });
    expect(done.content).toEqual([{ type: "text", text: "done: 4C and windy" }]);
    expect(fake.calls()[1]).toMatchObject({ tools: ["get_weather"], tool_results: ["4C and windy"] });
    expect(fake.requests[1]?.body?.tools).toEqual([WEATHER_TOOL]);
  });

  it("surfaces a scripted 429 with retry-after as RateLimitError", async () => {
    fake.enqueue({ status: 429, error_message: "slow down", headers: { "retry-after": "7" } });
    const err = await caught(
      client.messages.create({ model: "m", max_tokens: 8, messages: [{ role: "user", content: "x" }] }),
    );
    expect(err).toBeInstanceOf(Anthropic.RateLimitError);
    if (!(err instanceof Anthropic.RateLimitError)) return;
    expect(err.status).toBe(429);
    expect(err.type).toBe("rate_limit_error");
    expect(err.apiMessage).toBe("slow down");
    expect(err.headers.get("retry-after")).toBe("7");
  });

  it("rejects a request without max_tokens, as the real API does", async () => {
    const res = await fetch(`${fake.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "m", messages: [] }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
  });

  it("lists models", async () => {
    const page = await client.models.list();
    expect(page.data.map((m) => m.id)).toEqual(["claude-fake"]);
    expect(page.has_more).toBe(false);
  });
});
