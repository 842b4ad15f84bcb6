// The fakes' embedding endpoints, driven by the official SDKs exactly as the provider plugins use
// them: the wire shapes, the recorded requests, the default model and the scripted failures.
import { ApiError, GoogleGenAI } from "@google/genai";
import { Ollama } from "ollama";
import OpenAI from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { DEFAULT_EMBED_DIMENSIONS, hashedEmbedding } from "./embeddings.js";
import { type FakeGemini, startFakeGemini } from "./gemini-server.js";
import { type FakeOllama, startFakeOllama } from "./ollama-server.js";
import { type FakeOpenAI, startFakeOpenAI } from "./openai-server.js";

async function caught(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error("expected the promise to reject");
}

const dot = (a: number[], b: number[]) => a.reduce((sum, v, i) => sum + v * (b[i] ?? 0), 0);

describe("the default fake embedding model", () => {
  it("is deterministic, normalised, and closer for texts that share words", () => {
    const ada = hashedEmbedding("Ada moved to Lisbon");
    expect(ada).toHaveLength(DEFAULT_EMBED_DIMENSIONS);
    expect(hashedEmbedding("Ada moved to Lisbon")).toEqual(ada);
    expect(Math.hypot(...ada)).toBeCloseTo(1, 10);
    expect(hashedEmbedding("", 16)).toHaveLength(16);
    expect(Math.hypot(...hashedEmbedding(""))).toBeCloseTo(1, 10);
    const near = dot(ada, hashedEmbedding("Where in Lisbon did Ada move?"));
    const far = dot(ada, hashedEmbedding("the quarterly tax report is due"));
    expect(near).toBeGreaterThan(far);
  });
});

describe("fake OpenAI /v1/embeddings", () => {
  let fake: FakeOpenAI;
  let client: OpenAI;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    client = new OpenAI({ apiKey: "test-key", baseURL: fake.url, maxRetries: 0 });
  });
  afterAll(() => fake.close());
  beforeEach(() => fake.reset());

  it("answers the SDK's default base64 request with vectors it decodes, in input order", async () => {
    const res = await client.embeddings.create({ model: "emb-test", input: ["first text", "second text"] });
    expect(res.data.map((d) => d.index)).toEqual([0, 1]);
    expect(res.model).toBe("emb-test");
    expect(res.usage.prompt_tokens).toBeGreaterThan(0);
    for (const [i, text] of ["first text", "second text"].entries()) {
      const got = Array.from(res.data[i]?.embedding ?? []);
      expect(got).toHaveLength(DEFAULT_EMBED_DIMENSIONS);
      // float32 on the wire: close, not equal.
      const want = hashedEmbedding(text);
      for (const [j, v] of got.entries()) expect(v).toBeCloseTo(want[j] ?? Number.NaN, 6);
    }
    expect(fake.embedCalls).toEqual([{ model: "emb-test", inputs: ["first text", "second text"] }]);
    expect(fake.embedKeys).toEqual(["test-key"]);
  });

  it("answers floats of the dimensions asked for, and records them", async () => {
    const res = await client.embeddings.create({
      model: "emb-test",
      input: ["one", "two", "three"],
      dimensions: 16,
      encoding_format: "float",
    });
    expect(res.data.map((d) => d.embedding)).toEqual(
      ["one", "two", "three"].map((t) => hashedEmbedding(t, 16)),
    );
    expect(fake.embedCalls[0]).toEqual({
      model: "emb-test",
      inputs: ["one", "two", "three"],
      dimensions: 16,
    });
    // Chat requests are not mixed with them.
    expect(fake.requests).toEqual([]);
  });

  it("fails the next N calls as told: a 429 with retry-after, then a 500, then answers again", async () => {
    fake.failEmbeddings(1, { status: 429, retry_after_s: 3 });
    fake.failEmbeddings(1, { status: 500, message: "boom" });
    const limited = await caught(client.embeddings.create({ model: "m", input: ["x"] }));
    expect(limited).toBeInstanceOf(OpenAI.RateLimitError);
    expect((limited as InstanceType<typeof OpenAI.APIError>).headers?.get("retry-after")).toBe("3");
    const broken = await caught(client.embeddings.create({ model: "m", input: ["x"] }));
    expect(broken).toBeInstanceOf(OpenAI.InternalServerError);
    expect((broken as Error).message).toContain("boom");
    const res = await client.embeddings.create({ model: "m", input: ["x"], encoding_format: "float" });
    expect(res.data).toHaveLength(1);
    expect(fake.embedCalls).toHaveLength(3);
  });

  it("hangs when told until the client gives up", async () => {
    fake.failEmbeddings(1, { hang: true });
    const started = Date.now();
    const err = await caught(
      client.embeddings.create({ model: "m", input: ["x"] }, { signal: AbortSignal.timeout(100) }),
    );
    expect(err).toBeInstanceOf(OpenAI.APIUserAbortError);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it("takes an embed option for its model", async () => {
    const custom = await startFakeOpenAI({ embed: (text) => [text.length, 0, 0, 1] });
    try {
      const api = new OpenAI({ apiKey: "k", baseURL: custom.url, maxRetries: 0 });
      const res = await api.embeddings.create({ model: "m", input: ["abc"], encoding_format: "float" });
      expect(res.data[0]?.embedding).toEqual([3, 0, 0, 1]);
      const cut = await api.embeddings.create({
        model: "m",
        input: ["abc"],
        dimensions: 2,
        encoding_format: "float",
      });
      expect(cut.data[0]?.embedding).toEqual([1, 0]);
    } finally {
      await custom.close();
    }
  });
});

describe("fake Ollama /api/embed", () => {
  let fake: FakeOllama;
  let client: Ollama;

  beforeAll(async () => {
    fake = await startFakeOllama();
    client = new Ollama({ host: fake.url });
  });
  afterAll(() => fake.close());
  beforeEach(() => fake.reset());

  it("answers embeddings in input order with prompt_eval_count, dimensions honoured", async () => {
    const res = await client.embed({ model: "nomic-fake", input: ["alpha", "beta"], dimensions: 32 });
    expect(res.model).toBe("nomic-fake");
    expect(res.embeddings).toEqual([hashedEmbedding("alpha", 32), hashedEmbedding("beta", 32)]);
    expect(res.prompt_eval_count).toBeGreaterThan(0);
    expect(fake.embedCalls).toEqual([{ model: "nomic-fake", inputs: ["alpha", "beta"], dimensions: 32 }]);
    expect(fake.embedKeys).toEqual([undefined]);
    expect(fake.requests).toEqual([]);
  });

  it("takes a single string input", async () => {
    const res = await client.embed({ model: "m", input: "solo" });
    expect(res.embeddings).toEqual([hashedEmbedding("solo")]);
  });

  it("fails as told with Ollama's error body", async () => {
    fake.failEmbeddings(1, { status: 500, message: "model crashed" });
    const err = await caught(client.embed({ model: "m", input: ["x"] }));
    expect(err).toMatchObject({ name: "ResponseError", status_code: 500, error: "model crashed" });
    expect((await client.embed({ model: "m", input: ["x"] })).embeddings).toHaveLength(1);
  });
});

describe("fake Gemini embedContent / batchEmbedContents", () => {
  let fake: FakeGemini;
  let ai: GoogleGenAI;

  beforeAll(async () => {
    fake = await startFakeGemini();
    ai = new GoogleGenAI({ apiKey: "test-key", vertexai: false, httpOptions: { baseUrl: fake.url } });
  });
  afterAll(() => fake.close());
  beforeEach(() => fake.reset());

  it("answers the SDK's batchEmbedContents with a vector per content, task type and dimensionality recorded", async () => {
    const res = await ai.models.embedContent({
      model: "gemini-embedding-fake",
      contents: [{ parts: [{ text: "first" }] }, { parts: [{ text: "second" }] }],
      config: { taskType: "RETRIEVAL_QUERY", outputDimensionality: 24 },
    });
    expect(res.embeddings?.map((e) => e.values)).toEqual([
      hashedEmbedding("first", 24),
      hashedEmbedding("second", 24),
    ]);
    expect(fake.embedCalls).toEqual([
      {
        model: "gemini-embedding-fake",
        inputs: ["first", "second"],
        dimensions: 24,
        task_type: "RETRIEVAL_QUERY",
      },
    ]);
    expect(fake.requests).toEqual([]);
    expect(fake.embedKeys).toEqual(["test-key"]);
  });

  it("fails as told: a 429 carries its wait in the body's RetryInfo", async () => {
    fake.failEmbeddings(1, { status: 429, retry_after_s: 7 });
    const err = await caught(ai.models.embedContent({ model: "m", contents: [{ parts: [{ text: "x" }] }] }));
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(429);
    expect((err as ApiError).message).toContain('"retryDelay":"7s"');
  });

  it("serves :embedContent for one content", async () => {
    const res = await fetch(`${fake.url}/v1beta/models/emb:embedContent`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ content: { parts: [{ text: "single" }] } }),
    });
    expect(await res.json()).toEqual({ embedding: { values: hashedEmbedding("single") } });
  });
});
