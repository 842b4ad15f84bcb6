import OpenAI from "openai";
import type { ChatCompletionChunk, ChatCompletionMessageParam } from "openai/resources/chat/completions";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { FakeOpenAI } from "./openai-server.js";
import { startFakeOpenAI } from "./openai-server.js";

const WEATHER_TOOL = {
  type: "function" as const,
  function: {
    name: "get_weather",
    description: "Weather for a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
};

async function caught(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error("expected the promise to reject");
}

describe("fake OpenAI server", () => {
  let fake: FakeOpenAI;
  let client: OpenAI;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    client = new OpenAI({ apiKey: "test-key", baseURL: fake.url, maxRetries: 0 });
  });
  afterAll(async () => {
    await fake.close();
  });
  beforeEach(() => {
    fake.reset();
  });

  it("answers a scripted plain reply with its usage and the requested model", async () => {
    fake.enqueue({ text: "Hello there", usage: { prompt_tokens: 11, completion_tokens: 7 } });
    const res = await client.chat.completions.create({
      model: "gpt-test",
      messages: [{ role: "user", content: "hi" }],
    });
    expect(fake.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    expect(res.id).toMatch(/^chatcmpl-/);
    expect(res.object).toBe("chat.completion");
    expect(res.model).toBe("gpt-test");
    expect(res.choices[0]?.message).toMatchObject({ role: "assistant", content: "Hello there" });
    expect(res.choices[0]?.message.tool_calls).toBeUndefined();
    expect(res.choices[0]?.finish_reason).toBe("stop");
    expect(res.usage).toEqual({
      prompt_tokens: 11,
      completion_tokens: 7,
      total_tokens: 18,
      prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    });
  });

  it("answers queued replies in FIFO order and honours a model override", async () => {
    fake.enqueue({ text: "first" }, { text: "second", model: "other-model" });
    const ask = () =>
      client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "x" }] });
    const a = await ask();
    const b = await ask();
    expect([a.choices[0]?.message.content, b.choices[0]?.message.content]).toEqual(["first", "second"]);
    expect([a.model, b.model]).toEqual(["m", "other-model"]);
  });

  it("echoes the last user message by default and estimates usage from characters", async () => {
    const res = await client.chat.completions.create({
      model: "m",
      messages: [
        { role: "system", content: "You are terse." },
        { role: "user", content: "ping" },
      ],
    });
    expect(res.choices[0]?.message.content).toBe("echo: ping");
    // 14 + 4 prompt chars -> ceil(18 / 4); "echo: ping" is 10 chars -> ceil(10 / 4).
    expect(res.usage).toEqual({
      prompt_tokens: 5,
      completion_tokens: 3,
      total_tokens: 8,
      prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    });
  });

  it("setDefault replaces the default reply and reset restores it", async () => {
    fake.setDefault((body) => ({ text: `custom for ${body.model}` }));
    const ask = () =>
      client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "q" }] });
    expect((await ask()).choices[0]?.message.content).toBe("custom for m");
    fake.enqueue({ text: "dropped by reset" });
    fake.reset();
    expect(fake.requests).toEqual([]);
    expect((await ask()).choices[0]?.message.content).toBe("echo: q");
  });

  it("streams a reply in several deltas that join to the text, with usage last", async () => {
    fake.enqueue({ text: "the quick brown fox jumps" });
    const stream = await client.chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "go" }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks: ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);

    expect(chunks.every((c) => c.object === "chat.completion.chunk")).toBe(true);
    expect(chunks[0]?.choices[0]?.delta).toMatchObject({ role: "assistant", content: "" });
    const pieces = chunks
      .flatMap((c) => c.choices.map((choice) => choice.delta.content ?? ""))
      .filter(Boolean);
    expect(pieces.length).toBeGreaterThanOrEqual(3);
    expect(pieces.join("")).toBe("the quick brown fox jumps");
    const finishes = chunks.flatMap((c) => c.choices.map((choice) => choice.finish_reason)).filter(Boolean);
    expect(finishes).toEqual(["stop"]);
    const last = chunks.at(-1);
    expect(last?.choices).toEqual([]);
    expect(last?.usage).toEqual({
      prompt_tokens: 1,
      completion_tokens: 7,
      total_tokens: 8,
      prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    });
  });

  it("returns a non-streamed tool call whose arguments parse back to the object", async () => {
    fake.enqueue({ tool_calls: [{ name: "get_weather", arguments: { city: "Oslo", days: 2 } }] });
    const res = await client.chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "weather?" }],
      tools: [WEATHER_TOOL],
    });
    const choice = res.choices[0];
    expect(choice?.finish_reason).toBe("tool_calls");
    expect(choice?.message.content).toBeNull();
    const call = choice?.message.tool_calls?.[0];
    if (call?.type !== "function") throw new Error("expected a function tool call");
    expect(call.id).toMatch(/^call_/);
    expect(call.function.name).toBe("get_weather");
    expect(JSON.parse(call.function.arguments)).toEqual({ city: "Oslo", days: 2 });
  });

  it("sends string tool arguments verbatim, even when they are not valid JSON", async () => {
    fake.enqueue({ text: "let me check", tool_calls: [{ name: "get_weather", arguments: '{"city": "Os' }] });
    const res = await client.chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "w" }],
    });
    const call = res.choices[0]?.message.tool_calls?.[0];
    if (call?.type !== "function") throw new Error("expected a function tool call");
    expect(call.function.arguments).toBe('{"city": "Os');
    expect(res.choices[0]?.message.content).toBe("let me check");
  });

  it("streams a tool call whose argument deltas accumulate to valid JSON, then finishes the round trip", async () => {
    fake.enqueue({ tool_calls: [{ name: "get_weather", arguments: { city: "Reykjavik" } }] });
    const messages: ChatCompletionMessageParam[] = [{ role: "user", content: "weather in Reykjavik?" }];
    const stream = await client.chat.completions.create({
      model: "m",
      messages,
      tools: [WEATHER_TOOL],
      stream: true,
    });
    let id = "";
    let name = "";
    const argPieces: string[] = [];
    let finish: string | null = null;
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      for (const delta of choice?.delta.tool_calls ?? []) {
        expect(delta.index).toBe(0);
        id += delta.id ?? "";
        name += delta.function?.name ?? "";
        if (delta.function?.arguments) argPieces.push(delta.function.arguments);
      }
      finish = choice?.finish_reason ?? finish;
    }
    expect(finish).toBe("tool_calls");
    expect(id).toMatch(/^call_/);
    expect(name).toBe("get_weather");
    expect(argPieces.length).toBeGreaterThanOrEqual(2);
    expect(JSON.parse(argPieces.join(""))).toEqual({ city: "Reykjavik" });

    messages.push(
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id, type: "function", function: { name, arguments: argPieces.join("") } }],
      },
      { role: "tool", tool_call_id: id, content: "4C and windy" },
    );
    const done = await client.chat.completions.create({ model: "m", messages, tools: [WEATHER_TOOL] });
    expect(done.choices[0]?.message.content).toBe("done: 4C and windy");
    expect(fake.requests[1]?.body?.messages.at(-1)).toEqual({
      role: "tool",
      tool_call_id: id,
      content: "4C and windy",
    });
  });

  it("records each request with its messages, tools, options and bearer token", async () => {
    await client.chat.completions.create({
      model: "m",
      messages: [
        { role: "system", content: "sys" },
        { role: "user", content: "hello", name: "alice" },
      ],
      tools: [WEATHER_TOOL],
      temperature: 0.2,
      max_completion_tokens: 64,
    });
    await client.chat.completions.create({ model: "m2", messages: [{ role: "user", content: "again" }] });
    expect(fake.requests).toHaveLength(2);
    const [first, second] = fake.requests;
    expect(first?.method).toBe("POST");
    expect(first?.path).toBe("/v1/chat/completions");
    expect(first?.headers.authorization).toBe("Bearer test-key");
    expect(first?.headers["content-type"]).toBe("application/json");
    expect(first?.body).toEqual({
      model: "m",
      messages: [
        { role: "system", content: "sys" },
        { role: "user", content: "hello", name: "alice" },
      ],
      tools: [WEATHER_TOOL],
      temperature: 0.2,
      max_completion_tokens: 64,
    });
    expect(second?.body?.model).toBe("m2");
  });

  it("surfaces a scripted 429 with retry-after as RateLimitError", async () => {
    fake.enqueue({ status: 429, error_message: "slow down", headers: { "retry-after": "7" } });
    const err = await caught(client.chat.completions.create({ model: "m", messages: [] }));
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    if (!(err instanceof OpenAI.RateLimitError)) return;
    expect(err.status).toBe(429);
    expect(err.message).toBe("429 slow down");
    expect(err.code).toBe("rate_limit_exceeded");
    expect(err.type).toBe("rate_limit_error");
    expect(err.headers.get("retry-after")).toBe("7");
  });

  it("surfaces a scripted 500 as InternalServerError with the default message", async () => {
    fake.enqueue({ status: 500 });
    const err = await caught(client.chat.completions.create({ model: "m", messages: [] }));
    expect(err).toBeInstanceOf(OpenAI.InternalServerError);
    if (!(err instanceof OpenAI.InternalServerError)) return;
    expect(err.status).toBe(500);
    expect(err.message).toBe("500 scripted failure");
  });

  it("a truncated stream makes iteration throw undici's raw 'terminated' TypeError, unwrapped", async () => {
    fake.enqueue({ text: "one two three four five six", truncate_stream: true });
    const stream = await client.chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "go" }],
      stream: true,
    });
    const chunks: ChatCompletionChunk[] = [];
    const err = await caught(
      (async () => {
        for await (const chunk of stream) chunks.push(chunk);
      })(),
    );
    // The SDK does not wrap mid-body failures: it is not an APIError nor an APIConnectionError.
    expect(err).toBeInstanceOf(TypeError);
    expect(err).not.toBeInstanceOf(OpenAI.OpenAIError);
    expect((err as Error).message).toBe("terminated");
    expect((err as Error).cause).toMatchObject({ code: "UND_ERR_SOCKET", message: "other side closed" });
    expect(chunks.length).toBeGreaterThanOrEqual(2);
    expect(chunks.some((c) => c.choices.some((choice) => choice.finish_reason !== null))).toBe(false);
  });

  it("delay_ms longer than the SDK timeout surfaces as APIConnectionTimeoutError", async () => {
    fake.enqueue({ text: "too late", delay_ms: 1_000 });
    const started = Date.now();
    const err = await caught(
      client.chat.completions.create(
        { model: "m", messages: [{ role: "user", content: "x" }] },
        { timeout: 100 },
      ),
    );
    expect(err).toBeInstanceOf(OpenAI.APIConnectionTimeoutError);
    expect(Date.now() - started).toBeLessThan(900);
    // The abandoned reply was consumed; the server keeps answering normally.
    const next = await client.chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "y" }],
    });
    expect(next.choices[0]?.message.content).toBe("echo: y");
  });

  it("delay_ms within the timeout just delays the answer", async () => {
    fake.enqueue({ text: "patient", delay_ms: 150 });
    const started = Date.now();
    const res = await client.chat.completions.create({ model: "m", messages: [] }, { timeout: 5_000 });
    expect(res.choices[0]?.message.content).toBe("patient");
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
  });

  it("lists fake-model on /v1/models", async () => {
    const ids: string[] = [];
    for await (const model of client.models.list()) ids.push(model.id);
    expect(ids).toEqual(["fake-model"]);
  });

  it("answers unknown routes with 404 and malformed JSON with 400, in the OpenAI error shape", async () => {
    const missing = await fetch(`${fake.url}/audio/speech`, { method: "POST", body: "{}" });
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({
      error: { type: "invalid_request_error", code: "not_found" },
    });

    fake.enqueue({ text: "still queued" });
    const bad = await fetch(`${fake.url}/chat/completions`, { method: "POST", body: "{not json" });
    expect(bad.status).toBe(400);
    const body: unknown = await bad.json();
    expect(body).toMatchObject({ error: { type: "invalid_request_error", message: expect.any(String) } });
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0]?.body).toBeUndefined();
    const res = await client.chat.completions.create({ model: "m", messages: [] });
    expect(res.choices[0]?.message.content).toBe("still queued");
  });
});

describe("closing the fake", () => {
  it("ends open sockets so a pending request fails instead of hanging", async () => {
    const fake = await startFakeOpenAI();
    const client = new OpenAI({ apiKey: "test-key", baseURL: fake.url, maxRetries: 0 });
    fake.enqueue({ text: "never sent", delay_ms: 30_000 });
    const pending = caught(client.chat.completions.create({ model: "m", messages: [] }));
    while (fake.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    const started = Date.now();
    await fake.close();
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(await pending).toBeInstanceOf(OpenAI.APIConnectionError);
  });
});
