import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { EmbedRequest, ModelSettings } from "../../sdk/index.js";
import { hashedEmbedding } from "../../test/fakes/embeddings.js";
import { type FakeGemini, startFakeGemini } from "../../test/fakes/gemini-server.js";
import { failure } from "../../test/helpers/provider.js";
import { createGoogleDriver } from "./driver.js";

const KEY_ENV = "SPAR_TEST_GEMINI_KEY";
const KEY = "AIzaTest0123456789abcdef";

let fake: FakeGemini;
let settings: ModelSettings;

beforeAll(async () => {
  fake = await startFakeGemini();
  settings = { provider: "google", model: "gemini-embedding-001", base_url: fake.url, api_key_env: KEY_ENV };
});
afterEach(() => fake.reset());
afterAll(() => fake.close());

function embed(request: Partial<EmbedRequest> & { input: string[] }, at = settings) {
  const driver = createGoogleDriver(at, { [KEY_ENV]: KEY });
  if (!driver.embed) throw new Error("the google driver embeds");
  return driver.embed({ model: "gemini-embedding-001", ...request });
}

describe("the Gemini driver's embed", () => {
  it("sends every text as its own content in one batchEmbedContents call and keeps their order", async () => {
    const texts = ["Ada moved to Lisbon", "Bob stayed in Porto", "the sea"];
    const reply = await embed({ input: texts });
    expect(reply.vectors).toEqual(texts.map((t) => hashedEmbedding(t)));
    expect(fake.embedCalls).toEqual([{ model: "gemini-embedding-001", inputs: texts }]);
  });

  it("keeps texts apart for the gemini-embedding-2 models too (the SDK would join plain strings)", async () => {
    const reply = await embed({ model: "gemini-embedding-2-preview", input: ["a b", "c d"] });
    expect(reply.vectors).toHaveLength(2);
    expect(fake.embedCalls[0]?.inputs).toEqual(["a b", "c d"]);
  });

  it("sends the purpose as the task type, and dimensions as outputDimensionality", async () => {
    await embed({ input: ["stored"], purpose: "document", dimensions: 16 });
    await embed({ input: ["asked"], purpose: "query" });
    await embed({ input: ["plain"] });
    expect(fake.embedCalls.map((c) => [c.task_type, c.dimensions])).toEqual([
      ["RETRIEVAL_DOCUMENT", 16],
      ["RETRIEVAL_QUERY", undefined],
      [undefined, undefined],
    ]);
  });

  it("maps a 429 to a retryable PROVIDER_ERROR with the RetryInfo wait, and a 400 to one not worth retrying", async () => {
    fake.failEmbeddings(1, { status: 429, retry_after_s: 5, message: "quota" });
    fake.failEmbeddings(1, { status: 400, message: `API key ${KEY} rejected` });
    const limited = await failure(embed({ input: ["x"] }));
    expect(limited.extra).toEqual({
      provider: "google",
      provider_status: 429,
      retryable: true,
      retry_after_s: 5,
    });
    const bad = await failure(embed({ input: ["x"] }));
    expect(bad.extra).toMatchObject({ provider_status: 400, retryable: false });
    expect(bad.message).not.toContain(KEY);
  });

  it("maps an abort to PROVIDER_ERROR", async () => {
    fake.failEmbeddings(1, { hang: true });
    const err = await failure(embed({ input: ["x"], signal: AbortSignal.timeout(50) }));
    expect(err.code).toBe("PROVIDER_ERROR");
  });

  it("refuses vectors that are not the dimensions asked for", async () => {
    const odd = await startFakeGemini({ embed: () => [1, 0] });
    try {
      const err = await failure(embed({ input: ["a"], dimensions: 8 }, { ...settings, base_url: odd.url }));
      expect(err.message).toBe("google: the embedding reply had a vector of 2 numbers at 0, not 8");
      expect(err.extra.retryable).toBe(false);
    } finally {
      await odd.close();
    }
  });
});
