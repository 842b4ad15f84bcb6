import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { EmbedRequest, ModelSettings } from "../../sdk/index.js";
import { hashedEmbedding } from "../../test/fakes/embeddings.js";
import { type FakeOllama, startFakeOllama } from "../../test/fakes/ollama-server.js";
import { failure } from "../../test/helpers/provider.js";
import { createOllamaDriver } from "./driver.js";

const KEY_ENV = "SPAR_TEST_OLLAMA_KEY";
const KEY = "ollama-secret-0123456789";

let fake: FakeOllama;
let settings: ModelSettings;

beforeAll(async () => {
  fake = await startFakeOllama();
  settings = { provider: "ollama", model: "nomic-embed-text", base_url: fake.url, api_key_env: KEY_ENV };
});
afterEach(() => fake.reset());
afterAll(() => fake.close());

function embed(request: Partial<EmbedRequest> & { input: string[] }, at = settings) {
  const driver = createOllamaDriver(at, { env: { [KEY_ENV]: KEY } });
  if (!driver.embed) throw new Error("the ollama driver embeds");
  return driver.embed({ model: "nomic-embed-text", ...request });
}

describe("the Ollama driver's embed", () => {
  it("sends the texts to /api/embed and keeps their order, with prompt_eval_count as the usage", async () => {
    const texts = ["one fish", "two fish", "red fish", "blue fish"];
    const reply = await embed({ input: texts });
    expect(reply.vectors).toEqual(texts.map((t) => hashedEmbedding(t)));
    expect(reply.usage?.input_tokens).toBeGreaterThan(0);
    expect(fake.embedCalls).toEqual([{ model: "nomic-embed-text", inputs: texts }]);
  });

  it("passes dimensions on", async () => {
    const reply = await embed({ input: ["short"], dimensions: 8 });
    expect(reply.vectors).toEqual([hashedEmbedding("short", 8)]);
    expect(fake.embedCalls[0]?.dimensions).toBe(8);
  });

  it("maps a 503 to a retryable PROVIDER_ERROR and a 400 to one not worth retrying, never with the key", async () => {
    fake.failEmbeddings(1, { status: 503, retry_after_s: 2, message: "loading model" });
    fake.failEmbeddings(1, { status: 400, message: `bad input (key ${KEY})` });
    const busy = await failure(embed({ input: ["x"] }));
    expect(busy.extra).toEqual({
      provider: "ollama",
      provider_status: 503,
      retryable: true,
      retry_after_s: 2,
    });
    const bad = await failure(embed({ input: ["x"] }));
    expect(bad.extra).toMatchObject({ provider_status: 400, retryable: false });
    expect(bad.message).not.toContain(KEY);
  });

  it("names `ollama pull` for a model that is not there", async () => {
    fake.failEmbeddings(1, {
      status: 404,
      message: 'model "nomic-embed-text" not found, try pulling it first',
    });
    const err = await failure(embed({ input: ["x"] }));
    expect(err.message).toContain("run `ollama pull nomic-embed-text` first");
  });

  it("maps an abort to PROVIDER_ERROR, not retryable", async () => {
    fake.failEmbeddings(1, { hang: true });
    const err = await failure(embed({ input: ["x"], signal: AbortSignal.timeout(50) }));
    expect(err.code).toBe("PROVIDER_ERROR");
    expect(err.extra.retryable).toBe(false);
  });

  it("refuses a reply whose vectors differ in length", async () => {
    const odd = await startFakeOllama({ embed: (text) => (text === "b" ? [1, 0, 0] : [1, 0]) });
    try {
      const err = await failure(embed({ input: ["a", "b"] }, { ...settings, base_url: odd.url }));
      expect(err.message).toBe("ollama: the embedding reply had a vector of 3 numbers at 1, not 2");
      expect(err.extra.retryable).toBe(false);
    } finally {
      await odd.close();
    }
  });
});
