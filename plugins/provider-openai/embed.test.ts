import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ModelSettings } from "../../sdk/index.js";
import { hashedEmbedding } from "../../test/fakes/embeddings.js";
import type { FakeOpenAI } from "../../test/fakes/openai-server.js";
import { startFakeOpenAI } from "../../test/fakes/openai-server.js";
import { failure, providerResolver } from "../../test/helpers/provider.js";
import { createOpenAiDriver } from "./driver.js";
import plugin from "./index.js";
import { embedded } from "./wire.js";

const KEY_ENV = "SPAR_TEST_OPENAI_KEY";
const KEY = "sk-test-0123456789abcdef";

let fake: FakeOpenAI;
let settings: ModelSettings;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  settings = { provider: "openai", model: "text-embedding-test", base_url: fake.url, api_key_env: KEY_ENV };
});
afterEach(() => fake.reset());
afterAll(() => fake.close());

const driver = (env: NodeJS.ProcessEnv = { [KEY_ENV]: KEY }) => createOpenAiDriver(settings, env);
const embed = (input: string[], more: { dimensions?: number; signal?: AbortSignal } = {}) => {
  const { embed } = driver();
  if (!embed) throw new Error("the openai driver embeds");
  return embed({ model: "text-embedding-test", input, ...more });
};

describe("the OpenAI driver's embed", () => {
  it("sends the texts to /v1/embeddings as floats and keeps their order, with the usage", async () => {
    const texts = ["Ada moved to Lisbon", "the cat sleeps", "tax report"];
    const reply = await embed(texts);
    // Equal to the float64 vectors, so they came as JSON floats, not float32 base64.
    expect(reply.vectors).toEqual(texts.map((t) => hashedEmbedding(t)));
    expect(reply.usage?.input_tokens).toBeGreaterThan(0);
    expect(fake.embedCalls).toEqual([{ model: "text-embedding-test", inputs: texts }]);
  });

  it("passes dimensions on, and sends the paired key as a bearer token", async () => {
    const reply = await embed(["short"], { dimensions: 12 });
    expect(reply.vectors).toEqual([hashedEmbedding("short", 12)]);
    expect(fake.embedCalls[0]?.dimensions).toBe(12);
  });

  it("maps a 429 to a retryable PROVIDER_ERROR with its retry-after, without retrying", async () => {
    fake.failEmbeddings(1, { status: 429, retry_after_s: 4, message: "slow down" });
    const err = await failure(embed(["x"]));
    expect(err.code).toBe("PROVIDER_ERROR");
    expect(err.extra).toEqual({
      provider: "openai",
      provider_status: 429,
      retryable: true,
      retry_after_s: 4,
    });
    expect(fake.embedCalls).toHaveLength(1);
  });

  it("marks a 400 as not worth retrying, and never repeats the key", async () => {
    fake.failEmbeddings(1, { status: 400, message: `bad input for key ${KEY}` });
    const err = await failure(embed(["x"]));
    expect(err.extra).toMatchObject({ provider_status: 400, retryable: false });
    expect(err.message).not.toContain(KEY);
  });

  it("fails before any request when the key is missing", async () => {
    const err = await failure(driver({}).embed?.({ model: "m", input: ["x"] }) ?? Promise.resolve());
    expect(err.message).toContain(`set ${KEY_ENV}`);
    expect(fake.embedCalls).toHaveLength(0);
  });

  it("maps an abort to PROVIDER_ERROR", async () => {
    fake.failEmbeddings(1, { hang: true });
    const err = await failure(embed(["x"], { signal: AbortSignal.timeout(50) }));
    expect(err.code).toBe("PROVIDER_ERROR");
  });

  it("refuses vectors whose length is not the dimensions asked for", async () => {
    const odd = await startFakeOpenAI({ embed: () => [1] });
    try {
      const local = createOpenAiDriver({ ...settings, base_url: odd.url }, { [KEY_ENV]: KEY });
      const err = await failure(
        local.embed?.({ model: "m", input: ["a", "b"], dimensions: 8 }) ?? Promise.resolve(),
      );
      expect(err.message).toBe("openai: the embedding reply had a vector of 1 numbers at 0, not 8");
      expect(err.extra.retryable).toBe(false);
    } finally {
      await odd.close();
    }
  });

  it("is there for openrouter and openai_compatible too (same driver)", async () => {
    const resolve = await providerResolver(plugin);
    for (const provider of ["openai", "openrouter", "openai_compatible"]) {
      const d = await resolve(
        { provider, model: "m", base_url: fake.url },
        { key_env: KEY_ENV, api_key: KEY },
      );
      expect(typeof d?.embed).toBe("function");
    }
    const local = await resolve({ provider: "openai_compatible", model: "m", base_url: fake.url }, {});
    const reply = await local?.embed?.({ model: "local-emb", input: ["hi"] });
    expect(reply?.vectors).toEqual([hashedEmbedding("hi")]);
  });
});

describe("embedded (the reply's wire shape)", () => {
  const request = { model: "m", input: ["a", "b", "c"] };
  const item = (index: number, embedding: number[]) => ({ object: "embedding" as const, index, embedding });

  it("places each vector by its index, whatever order the items came in", () => {
    const reply = embedded("openai", request, { data: [item(2, [3, 3]), item(0, [1, 1]), item(1, [2, 2])] });
    expect(reply.vectors).toEqual([
      [1, 1],
      [2, 2],
      [3, 3],
    ]);
    expect(reply.usage).toBeUndefined();
  });

  it("refuses too few, too many, or a repeated index", () => {
    const few = { data: [item(0, [1]), item(1, [1])] };
    const many = { data: [item(0, [1]), item(1, [1]), item(2, [1]), item(3, [1])] };
    const repeated = { data: [item(0, [1]), item(0, [1]), item(2, [1])] };
    expect(() => embedded("openai", request, few)).toThrow("held 2 vectors for 3 inputs");
    expect(() => embedded("openai", request, many)).toThrow("held 4 vectors for 3 inputs");
    expect(() => embedded("openai", request, repeated)).toThrow("had no vector at 1");
    expect(() => embedded("openai", request, {})).toThrow("held 0 vectors for 3 inputs");
  });
});
