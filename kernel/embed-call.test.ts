import { describe, expect, it } from "vitest";
import { providerError } from "../lib/provider-errors.js";
import type { UsageMeter } from "../lib/usage-meter.js";
import type { EmbedRequest, EmbedResponse, LlmDriver } from "../sdk/types.js";
import { failure } from "../test/helpers/provider.js";
import { callEmbed, EMBED_TIMEOUT_S, llmService } from "./provider-call.js";

/** A driver whose embed answers `[index of the text, its length]`, after failing with `failures` in turn. */
function embedder(failures: unknown[] = [], hang = false) {
  const batches: EmbedRequest[] = [];
  const driver: LlmDriver = {
    provider: "p",
    probe: async () => "ok",
    complete: async () => {
      throw new Error("not used");
    },
    async embed(request): Promise<EmbedResponse> {
      batches.push(request);
      const fail = failures.shift();
      if (fail) throw fail;
      if (hang) {
        await new Promise((_, reject) =>
          request.signal?.addEventListener("abort", () => reject(providerError("p", "aborted"))),
        );
      }
      const vectors = request.input.map((text) => [Number(text.slice(1)), text.length]);
      return { vectors, usage: { input_tokens: request.input.length } };
    },
  };
  return { driver, batches };
}

const texts = (n: number) => Array.from({ length: n }, (_, i) => `t${i}`);
const recordSleeps = () => {
  const waits: number[] = [];
  return { waits, sleep: async (ms: number) => void waits.push(ms) };
};
const policy = { timeoutMs: 30_000, maxRetries: 2, baseDelayMs: 10 };

describe("callEmbed", () => {
  it("splits the input into batches of batch_size and keeps the vectors in input order, tokens summed", async () => {
    const { driver, batches } = embedder();
    const reply = await callEmbed(driver, { model: "m", input: texts(200) }, policy, 64);
    expect(batches.map((b) => b.input.length)).toEqual([64, 64, 64, 8]);
    expect(batches.every((b) => b.model === "m")).toBe(true);
    expect(reply.vectors.map((v) => v[0])).toEqual(texts(200).map((_, i) => i));
    expect(reply.usage).toEqual({ input_tokens: 200 });
  });

  it("never sends more than 96 texts in one call", async () => {
    const { driver, batches } = embedder();
    await callEmbed(driver, { model: "m", input: texts(200) }, policy, 500);
    expect(batches.map((b) => b.input.length)).toEqual([96, 96, 8]);
  });

  it("retries a 5xx and a 429 (after its retry-after) within one batch, then goes on", async () => {
    const { driver, batches } = embedder([
      providerError("p", "down", { status: 503 }),
      providerError("p", "slow down", { status: 429, retryAfterS: 2 }),
    ]);
    const { waits, sleep } = recordSleeps();
    const reply = await callEmbed(driver, { model: "m", input: texts(3) }, { ...policy, sleep });
    expect(reply.vectors).toHaveLength(3);
    expect(batches).toHaveLength(3);
    expect(waits[1]).toBe(2000);
  });

  it("does not retry a 400", async () => {
    const { driver, batches } = embedder([providerError("p", "bad input", { status: 400 })]);
    const err = await failure(callEmbed(driver, { model: "m", input: texts(3) }, policy));
    expect(err.code).toBe("PROVIDER_ERROR");
    expect(err.message).toBe("p: bad input");
    expect(batches).toHaveLength(1);
  });

  it("ends a batch that takes too long with PROVIDER_TIMEOUT", async () => {
    const { driver } = embedder([], true);
    const started = Date.now();
    const err = await failure(
      callEmbed(driver, { model: "m", input: texts(2) }, { ...policy, timeoutMs: 80 }),
    );
    expect(err.code).toBe("PROVIDER_TIMEOUT");
    expect(err.message).toBe("p: no complete reply within 0.08 s");
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it("refuses a provider whose driver has no embed, naming it, without calling it", async () => {
    const driver: LlmDriver = {
      provider: "anthropic",
      probe: async () => "",
      complete: async () => ({}) as never,
    };
    const err = await failure(callEmbed(driver, { model: "m", input: ["x"] }, policy));
    expect(err.code).toBe("PROVIDER_ERROR");
    expect(err.message).toMatch(/^anthropic: this provider has no embeddings API/);
    expect(err.extra).toEqual({ provider: "anthropic", retryable: false });
  });

  it("refuses a batch whose vectors are not as long as the first batch's", async () => {
    let call = 0;
    const driver: LlmDriver = {
      provider: "p",
      probe: async () => "",
      complete: async () => ({}) as never,
      embed: async (request) => ({ vectors: request.input.map(() => (call++ < 2 ? [1, 2] : [1, 2, 3])) }),
    };
    const err = await failure(callEmbed(driver, { model: "m", input: texts(4) }, policy, 2));
    expect(err.message).toBe("p: the embedding reply had a vector of 3 numbers at 0, not 2");
  });
});

describe("llm.embed (the service)", () => {
  const meter = (() => {
    throw new Error("embeddings are not metered");
  }) as unknown as UsageMeter;

  function service(driver: LlmDriver, embedBatch?: number) {
    const shutdown = new AbortController();
    const resolved: string[] = [];
    const llm = llmService({
      resolveDriver: async (settings) => {
        resolved.push(`${settings.provider}/${settings.model}`);
        return driver;
      },
      meter,
      shutdown: shutdown.signal,
      embedBatch,
    });
    return { llm, shutdown, resolved };
  }

  it("embeds with the settings' model in the configured batches, and contacts nobody for no input", async () => {
    const { driver, batches } = embedder();
    const { llm, resolved } = service(driver, 2);
    expect(await llm.embed({ provider: "p", model: "emb" }, { input: [] })).toEqual({ vectors: [] });
    expect(resolved).toEqual([]);
    const reply = await llm.embed({ provider: "p", model: "emb" }, { input: texts(5), purpose: "query" });
    expect(reply.vectors).toHaveLength(5);
    expect(batches.map((b) => [b.model, b.input.length, b.purpose])).toEqual([
      ["emb", 2, "query"],
      ["emb", 2, "query"],
      ["emb", 1, "query"],
    ]);
    expect(resolved).toEqual(["p/emb"]);
  });

  it("defaults to 64 texts a call and a 30 s deadline", async () => {
    const { driver, batches } = embedder();
    await service(driver).llm.embed({ provider: "p", model: "emb" }, { input: texts(65) });
    expect(batches.map((b) => b.input.length)).toEqual([64, 1]);
    expect(EMBED_TIMEOUT_S).toBe(30);
  });

  it("ends with CANCELLED when the caller or the daemon's shutdown aborts it", async () => {
    const { driver } = embedder([], true);
    const caller = new AbortController();
    const first = service(driver);
    const pending = first.llm.embed({ provider: "p", model: "e" }, { input: ["x"], signal: caller.signal });
    setTimeout(() => caller.abort(), 20);
    expect((await failure(pending)).code).toBe("CANCELLED");
    const second = service(driver);
    const stopping = second.llm.embed({ provider: "p", model: "e" }, { input: ["x"] });
    setTimeout(() => second.shutdown.abort(), 20);
    expect((await failure(stopping)).code).toBe("CANCELLED");
  });
});
