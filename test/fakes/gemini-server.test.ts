import { ApiError, type Content, type GenerateContentResponse, GoogleGenAI } from "@google/genai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { FakeGemini } from "./gemini-server.js";
import { startFakeGemini } from "./gemini-server.js";

const WEATHER = {
  name: "get_weather",
  description: "Weather for a city",
  parametersJsonSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};

async function caught(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error("expected the promise to reject");
}

describe("fake Gemini server", () => {
  let fake: FakeGemini;
  let ai: GoogleGenAI;

  beforeAll(async () => {
    fake = await startFakeGemini();
    ai = new GoogleGenAI({ apiKey: "test-key", vertexai: false, httpOptions: { baseUrl: fake.url } });
  });
  afterAll(() => fake.close());
  beforeEach(() => fake.reset());

  it("answers a scripted plain reply with usage and the model version, and records the request", async () => {
    fake.enqueue({
      text: "Hello there",
      usage: { prompt_tokens: 11, completion_tokens: 7 },
      model: "gemini-v2",
    });
    const res = await ai.models.generateContent({
      model: "gemini-test",
      contents: [{ role: "user", parts: [{ text: "hi" }] }],
      config: {
        systemInstruction: { parts: [{ text: "Be terse." }] },
        maxOutputTokens: 64,
        temperature: 0.3,
      },
    });
    expect(fake.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(res.candidates?.[0]?.content).toEqual({ role: "model", parts: [{ text: "Hello there" }] });
    expect(res.candidates?.[0]?.finishReason).toBe("STOP");
    expect(res.modelVersion).toBe("gemini-v2");
    expect(res.usageMetadata).toEqual({ promptTokenCount: 11, candidatesTokenCount: 7, totalTokenCount: 18 });

    const [request] = fake.requests;
    expect(request?.method).toBe("POST");
    expect(request?.path).toBe("/v1beta/models/gemini-test:generateContent");
    expect(request?.headers["x-goog-api-key"]).toBe("test-key");
    expect(request?.body?.generationConfig).toEqual({ maxOutputTokens: 64, temperature: 0.3 });
    expect(fake.calls()).toEqual([
      {
        model: "gemini-test",
        system: "Be terse.",
        tools: [],
        last_user_text: "hi",
        context: "",
        transcript: ["Be terse.", "hi"],
        tool_results: [],
        stream: false,
      },
    ]);
  });

  it("echoes the last user text by default and estimates usage from characters", async () => {
    const res = await ai.models.generateContent({ model: "m", contents: "ping" });
    expect(res.candidates?.[0]?.content?.parts).toEqual([{ text: "echo: ping" }]);
    // "ping" -> 1 token; "echo: ping" is 10 chars -> ceil(10 / 4).
    expect(res.usageMetadata).toMatchObject({ promptTokenCount: 1, candidatesTokenCount: 3 });
  });

  it("streams text in several chunks over SSE, the finish and usage last", async () => {
    fake.enqueue({ text: "the quick brown fox jumps" });
    const stream = await ai.models.generateContentStream({
      model: "m",
      contents: "go",
      config: { automaticContinuation: false },
    });
    const chunks: GenerateContentResponse[] = [];
    for await (const chunk of stream) chunks.push(chunk);

    expect(fake.requests[0]?.path).toBe("/v1beta/models/m:streamGenerateContent?alt=sse");
    const pieces = chunks.flatMap((c) => c.candidates?.[0]?.content?.parts?.map((p) => p.text ?? "") ?? []);
    expect(pieces.filter(Boolean).length).toBeGreaterThanOrEqual(3);
    expect(pieces.join("")).toBe("the quick brown fox jumps");
    const finishes = chunks.map((c) => c.candidates?.[0]?.finishReason).filter(Boolean);
    expect(finishes).toEqual(["STOP"]);
    expect(chunks.at(-1)?.usageMetadata?.candidatesTokenCount).toBe(7);
    expect(fake.calls()[0]?.stream).toBe(true);
  });

  it("returns a whole function call, then finishes the round trip with the tool result", async () => {
    fake.enqueue({ tool_calls: [{ name: "get_weather", arguments: { city: "Oslo", days: 2 } }] });
    const contents: Content[] = [{ role: "user", parts: [{ text: "weather in Oslo?" }] }];
    const config = { tools: [{ functionDeclarations: [WEATHER] }] };
    const first = await ai.models.generateContent({ model: "m", contents, config });
    const part = first.candidates?.[0]?.content?.parts?.[0];
    expect(part?.functionCall).toEqual({ name: "get_weather", args: { city: "Oslo", days: 2 } });
    expect(part?.thoughtSignature).toMatch(/^[A-Za-z0-9+/]{32}$/);

    contents.push(
      { role: "model", parts: [{ functionCall: { name: "get_weather", args: { city: "Oslo" } } }] },
      { role: "user", parts: [{ functionResponse: { name: "get_weather", response: { result: "4C" } } }] },
    );
    const done = await ai.models.generateContent({ model: "m", contents, config });
    expect(done.candidates?.[0]?.content?.parts).toEqual([{ text: 'done: {"result":"4C"}' }]);
    expect(fake.calls()[1]).toMatchObject({
      tools: ["get_weather"],
      last_user_text: "weather in Oslo?",
      tool_results: ['{"result":"4C"}'],
    });
    expect(fake.requests[1]?.body?.tools).toEqual([{ functionDeclarations: [WEATHER] }]);
  });

  it("streams function calls whole, in one chunk, only the first signed", async () => {
    fake.enqueue({
      text: "checking",
      tool_calls: [
        { name: "get_weather", arguments: { city: "Oslo" } },
        { name: "get_weather", arguments: { city: "Rome" } },
      ],
    });
    const stream = await ai.models.generateContentStream({ model: "m", contents: "w" });
    const withCalls: unknown[] = [];
    const signed: boolean[] = [];
    for await (const chunk of stream) {
      const calls = chunk.candidates?.[0]?.content?.parts?.filter((p) => p.functionCall) ?? [];
      if (calls.length > 0) withCalls.push(calls.map((p) => p.functionCall));
      signed.push(...calls.map((p) => p.thoughtSignature !== undefined));
    }
    expect(withCalls).toEqual([
      [
        { name: "get_weather", args: { city: "Oslo" } },
        { name: "get_weather", args: { city: "Rome" } },
      ],
    ]);
    expect(signed).toEqual([true, false]);
  });

  it("surfaces a scripted 429 as ApiError with the Google error body and RetryInfo", async () => {
    fake.enqueue({ status: 429, error_message: "slow down", headers: { "retry-after": "7" } });
    const err = await caught(ai.models.generateContent({ model: "m", contents: "x" }));
    expect(err).toBeInstanceOf(ApiError);
    if (!(err instanceof ApiError)) return;
    expect(err.status).toBe(429);
    // The SDK keeps the whole body as the message and drops the response headers.
    expect(JSON.parse(err.message)).toEqual({
      error: {
        code: 429,
        message: "slow down",
        status: "RESOURCE_EXHAUSTED",
        details: [{ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "7s" }],
      },
    });
    expect(fake.requests).toHaveLength(1);
  });

  it("sends the scripted headers with an error", async () => {
    fake.enqueue({ status: 503, headers: { "retry-after": "2" } });
    const res = await fetch(`${fake.url}/v1beta/models/m:generateContent`, {
      method: "POST",
      body: JSON.stringify({ contents: [] }),
    });
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("2");
    expect(await res.json()).toMatchObject({ error: { code: 503, status: "UNAVAILABLE" } });
  });

  it("lists models/gemini-fake", async () => {
    const pager = await ai.models.list();
    expect(pager.page.map((m) => m.name)).toEqual(["models/gemini-fake"]);
    expect(fake.requests).toHaveLength(0);
  });

  it("answers unknown routes with 404 and a body that is not JSON with 400, in the Google error shape", async () => {
    const missing = await fetch(`${fake.url}/v1/embeddings`, { method: "POST", body: "{}" });
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error: { code: 404, status: "NOT_FOUND" } });
    const bad = await fetch(`${fake.url}/v1beta/models/m:generateContent`, { method: "POST", body: "{no" });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: { code: 400, status: "INVALID_ARGUMENT" } });
    expect(fake.requests[0]?.body).toBeUndefined();
    expect(fake.calls()).toEqual([]);
  });

  it("a truncated stream throws undici's 'terminated' before any finishReason", async () => {
    fake.enqueue({ text: "one two three four five six", truncate_stream: true });
    const stream = await ai.models.generateContentStream({
      model: "m",
      contents: "go",
      config: { automaticContinuation: false },
    });
    const chunks: GenerateContentResponse[] = [];
    const err = await caught(
      (async () => {
        for await (const chunk of stream) chunks.push(chunk);
      })(),
    );
    expect(err).toBeInstanceOf(TypeError);
    expect((err as Error).message).toBe("terminated");
    expect(chunks.length).toBeGreaterThanOrEqual(1);
    expect(chunks.some((c) => c.candidates?.[0]?.finishReason)).toBe(false);
  });

  it("a malformed reply fails to parse, streamed or not", async () => {
    fake.enqueue({ malformed: true }, { malformed: true });
    expect(await caught(ai.models.generateContent({ model: "m", contents: "x" }))).toBeInstanceOf(
      SyntaxError,
    );
    const stream = await ai.models.generateContentStream({
      model: "m",
      contents: "x",
      config: { automaticContinuation: false },
    });
    const err = await caught(
      (async () => {
        for await (const _ of stream);
      })(),
    );
    expect(err).toBeInstanceOf(SyntaxError);
  });

  it("delay_ms holds the answer back, and an abort ends the wait", async () => {
    fake.enqueue({ text: "patient", delay_ms: 150 }, { text: "never", delay_ms: 5_000 });
    const started = Date.now();
    const res = await ai.models.generateContent({ model: "m", contents: "x" });
    expect(res.candidates?.[0]?.content?.parts?.[0]?.text).toBe("patient");
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    const aborted = caught(
      ai.models.generateContent({
        model: "m",
        contents: "x",
        config: { abortSignal: AbortSignal.timeout(50) },
      }),
    );
    expect(await aborted).toMatchObject({ name: "AbortError" });
  });
});
