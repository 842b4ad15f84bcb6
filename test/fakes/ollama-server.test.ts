import type { ChatResponse, Message, Tool } from "ollama";
import { Ollama } from "ollama";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import type { FakeOllama } from "./ollama-server.js";
import { startFakeOllama } from "./ollama-server.js";

const WEATHER_TOOL: Tool = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Weather for a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
};

async function caught(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof Error) return err;
    throw new Error(`expected an Error, got ${String(err)}`);
  }
  throw new Error("expected the promise to reject");
}

describe("fake Ollama server", () => {
  let fake: FakeOllama;
  let client: Ollama;

  beforeAll(async () => {
    fake = await startFakeOllama();
    client = new Ollama({ host: fake.url });
  });
  afterAll(() => fake.close());
  beforeEach(() => fake.reset());

  it("answers stream:false with the whole message, the done reason and the token counts", async () => {
    fake.enqueue({ text: "Hello there", usage: { prompt_tokens: 11, completion_tokens: 7 } });
    const res = await client.chat({
      model: "llama-test",
      messages: [{ role: "user", content: "hi" }],
      options: { num_predict: 64, temperature: 0.1 },
    });
    expect(fake.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(res).toMatchObject({
      model: "llama-test",
      message: { role: "assistant", content: "Hello there" },
      done: true,
      done_reason: "stop",
      prompt_eval_count: 11,
      eval_count: 7,
    });
    expect(res.message.tool_calls).toBeUndefined();
    expect(fake.requests[0]).toMatchObject({ method: "POST", path: "/api/chat" });
    expect(fake.requests[0]?.body).toMatchObject({ stream: false, options: { num_predict: 64 } });
    expect(fake.calls()[0]?.stream).toBe(false);
  });

  it("echoes the last user message by default, with estimated counts and a model override", async () => {
    fake.enqueue({ text: "renamed", model: "other:7b" });
    const ask = (content: string) =>
      client.chat({
        model: "m",
        messages: [
          { role: "system", content: "Be terse." },
          { role: "user", content },
        ],
        stream: false,
      });
    expect((await ask("x")).model).toBe("other:7b");
    const res = await ask("ping");
    expect(res.message.content).toBe("echo: ping");
    // "Be terse." + "ping" is 13 chars -> ceil(13 / 4); "echo: ping" is 10 chars -> ceil(10 / 4).
    expect([res.prompt_eval_count, res.eval_count]).toEqual([4, 3]);
    expect(fake.calls()[1]).toEqual({
      model: "m",
      system: "Be terse.",
      tools: [],
      last_user_text: "ping",
      context: "",
      transcript: ["Be terse.", "ping"],
      tool_results: [],
      stream: false,
    });
  });

  it("streams NDJSON pieces that join to the text, then a done line with the counts", async () => {
    fake.enqueue({ text: "the quick brown fox jumps", usage: { prompt_tokens: 3, completion_tokens: 5 } });
    const stream = await client.chat({
      model: "m",
      messages: [{ role: "user", content: "go" }],
      stream: true,
    });
    const parts: ChatResponse[] = [];
    for await (const part of stream) parts.push(part);
    const pieces = parts.filter((p) => !p.done).map((p) => p.message.content);
    expect(pieces.length).toBeGreaterThanOrEqual(3);
    expect(pieces.join("")).toBe("the quick brown fox jumps");
    expect(parts.at(-1)).toMatchObject({
      done: true,
      done_reason: "stop",
      message: { content: "" },
      prompt_eval_count: 3,
      eval_count: 5,
    });
    expect(fake.calls()[0]?.stream).toBe(true);
  });

  it("streams when the body leaves `stream` out, as Ollama does", async () => {
    const res = await fetch(`${fake.url}/api/chat`, {
      method: "POST",
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "raw" }] }),
    });
    expect(res.headers.get("content-type")).toBe("application/x-ndjson");
    const lines = (await res.text()).trim().split("\n");
    expect(lines.length).toBeGreaterThanOrEqual(4);
    expect(JSON.parse(lines.at(-1) ?? "{}")).toMatchObject({ done: true });
    expect(fake.calls()[0]?.stream).toBe(true);
  });

  it("returns tool calls with object arguments, then finishes the round trip after a tool result", async () => {
    fake.enqueue({ tool_calls: [{ name: "get_weather", arguments: { city: "Oslo", days: 2 } }] });
    const messages: Message[] = [{ role: "user", content: "weather?" }];
    const first = await client.chat({ model: "m", messages, tools: [WEATHER_TOOL], stream: false });
    expect(first.message.content).toBe("");
    expect(first.message.tool_calls).toEqual([
      { function: { name: "get_weather", arguments: { city: "Oslo", days: 2 } } },
    ]);

    messages.push(first.message, { role: "tool", content: "4C and windy", tool_name: "get_weather" });
    const stream = await client.chat({ model: "m", messages, tools: [WEATHER_TOOL], stream: true });
    let text = "";
    for await (const part of stream) text += part.message.content;
    expect(text).toBe("done: 4C and windy");
    expect(fake.requests[1]?.body?.messages.at(-1)).toEqual({
      role: "tool",
      content: "4C and windy",
      tool_name: "get_weather",
    });
    expect(fake.calls()[1]).toMatchObject({ tools: ["get_weather"], tool_results: ["4C and windy"] });
  });

  it("streams every tool call of a turn in one line before the done line", async () => {
    fake.enqueue({
      tool_calls: [
        { name: "get_weather", arguments: { city: "Oslo" } },
        { name: "get_weather", arguments: { city: "Bergen" } },
      ],
    });
    const stream = await client.chat({ model: "m", messages: [], tools: [WEATHER_TOOL], stream: true });
    const parts: ChatResponse[] = [];
    for await (const part of stream) parts.push(part);
    expect(parts).toHaveLength(2);
    expect(parts[0]?.message.tool_calls?.map((c) => c.function.arguments)).toEqual([
      { city: "Oslo" },
      { city: "Bergen" },
    ]);
    expect(parts[1]?.done).toBe(true);
  });

  it("surfaces a scripted error as the client's ResponseError with status and message", async () => {
    fake.enqueue({ status: 500, error_message: "the runner crashed", headers: { "retry-after": "2" } });
    const err = await caught(client.chat({ model: "m", messages: [] }));
    // ollama-js does not export ResponseError; it is known by name.
    expect(err.name).toBe("ResponseError");
    expect(err).toMatchObject({ status_code: 500, message: "the runner crashed" });

    fake.enqueue({ status: 404 });
    const missing = await caught(client.chat({ model: "qwen3:4b", messages: [], stream: true }));
    expect(missing).toMatchObject({
      status_code: 404,
      message: 'model "qwen3:4b" not found, try pulling it first',
    });
  });

  it("lists one installed model and reports a version", async () => {
    const list = await client.list();
    expect(list.models.map((m) => m.name)).toEqual(["llama-fake:latest"]);
    expect(list.models[0]?.details.family).toBe("llama");
    expect(await client.version()).toEqual({ version: "0.9.0" });
  });

  it("a truncated stream makes iteration throw undici's 'terminated' TypeError, before any done line", async () => {
    fake.enqueue({ text: "one two three four five six", truncate_stream: true });
    const stream = await client.chat({ model: "m", messages: [], stream: true });
    const parts: ChatResponse[] = [];
    const err = await caught(
      (async () => {
        for await (const part of stream) parts.push(part);
      })(),
    );
    expect(err).toBeInstanceOf(TypeError);
    expect(err.message).toBe("terminated");
    expect(parts.length).toBeGreaterThanOrEqual(1);
    expect(parts.some((p) => p.done)).toBe(false);
  });

  it("malformed: a SyntaxError unstreamed; streamed, the client skips the line and misses `done`", async () => {
    fake.enqueue({ malformed: true }, { malformed: true });
    expect(await caught(client.chat({ model: "m", messages: [], stream: false }))).toBeInstanceOf(
      SyntaxError,
    );

    // ollama-js logs unparsable lines with console.warn instead of failing on them.
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    const stream = await client.chat({ model: "m", messages: [], stream: true });
    const err = await caught(
      (async () => {
        for await (const _ of stream);
      })(),
    );
    expect(err.message).toBe("Did not receive done or success response in stream.");
    expect(warn).toHaveBeenCalledWith("invalid json: ", expect.stringContaining("broken"));
    warn.mockRestore();
  });

  it("counts a request the client abandons mid-delay", async () => {
    fake.enqueue({ text: "too late", delay_ms: 5_000 });
    const err = await caught(
      fetch(`${fake.url}/api/chat`, {
        method: "POST",
        body: JSON.stringify({ model: "m", messages: [] }),
        signal: AbortSignal.timeout(50),
      }),
    );
    expect(err.name).toBe("TimeoutError");
    await vi.waitFor(() => expect(fake.abandoned()).toBe(1));
    await client.chat({ model: "m", messages: [], stream: false });
    expect(fake.abandoned()).toBe(1);
  });
});
