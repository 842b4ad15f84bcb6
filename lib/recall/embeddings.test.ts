/**
 * The embedding queue and index over a real store's collection (store-sqlite): batches, retries with
 * backoff while the provider fails, vectors another node wrote seen at the next search, a new model
 * leaving the old vectors unread, and catch-up queueing only what has no vector of the model.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPluginData } from "../../sdk/collection-engine.js";
import type { Collection, PluginData, Store } from "../../sdk/index.js";
import { cleanUp, STORE_KINDS, tempHome } from "../../test/helpers/plugin-data.js";
import { createEmbeddings, type EmbedService, modelKey, type VectorRecord } from "./embeddings.js";
import { encodeVector } from "./vector-index.js";

const sqlite = STORE_KINDS.find((k) => k.name === "store-sqlite");
const manifest = JSON.parse(
  readFileSync(join(import.meta.dirname, "..", "..", "plugins", "moves-memory", "plugin.json"), "utf8"),
);
const quiet = { warn() {} };
/** A tiny embedder: a vector per first letter, so "apple" and "avocado" are one direction. */
const vectorOf = (text: string) => {
  const v = new Array(26).fill(0);
  v[(text.toLowerCase().charCodeAt(0) - 97 + 26) % 26] = 1;
  return v;
};

afterAll(cleanUp);

describe("embeddings", () => {
  let store: Store;
  let data: PluginData;
  beforeAll(async () => {
    store = await (sqlite as NonNullable<typeof sqlite>).open(tempHome());
    data = createPluginData({ plugin: manifest.id, data: manifest.data, store: () => store.collections });
  });
  afterAll(async () => {
    await store?.close();
  });

  function service(fail: () => boolean) {
    const calls: string[][] = [];
    const ring: EmbedService = {
      llm: {
        async embed(_settings, { input }) {
          calls.push(input);
          if (fail()) throw new Error("PROVIDER_ERROR: 503");
          return { vectors: input.map(vectorOf) };
        },
      },
    };
    return { ring, calls };
  }

  it("embeds in batches, retries while the provider fails, and finds by meaning", async () => {
    let failures = 1;
    const { ring, calls } = service(() => failures-- > 0);
    const config = { provider: "openai", model: "one", batch_size: 2, min_similarity: 0.2 };
    const embeddings = createEmbeddings({ config, ring, data, log: quiet });
    for (const [id, text] of [
      ["m1", "apple"],
      ["m2", "banana"],
      ["m3", "avocado"],
    ] as const) {
      embeddings.enqueue("memory", "f1", id, text);
    }
    // The first call failed: the worker waits (2 s) and tries again.
    await expect.poll(() => calls.length, { timeout: 10_000 }).toBeGreaterThanOrEqual(3);
    await embeddings.idle();
    expect(calls.map((c) => c.length)).toEqual([2, 2, 1]);
    const hits = await embeddings.search("memory", "f1", "apricot", 2);
    expect(hits?.map((h) => h.id).sort()).toEqual(["m1", "m3"]);
    expect(await embeddings.search("memory", "f2", "an apricot", 2)).toEqual([]);

    // What another node stored since is read at the next search.
    const vectors = data.vectors as Collection<VectorRecord>;
    await vectors.put({
      id: "memory:m4",
      fighter_id: "f1",
      kind: "memory",
      model: modelKey(config),
      vector: encodeVector(vectorOf("cherry")),
      at: new Date(Date.now() + 1000).toISOString(),
    });
    expect((await embeddings.search("memory", "f1", "cranberry", 1))?.[0]?.id).toBe("m4");
    embeddings.close();

    // Another model reads none of these vectors, and catch-up queues every row again.
    const { ring: other, calls: otherCalls } = service(() => false);
    const next = createEmbeddings({ config: { ...config, model: "two" }, ring: other, data, log: quiet });
    expect(await next.search("memory", "f1", "apricot", 2)).toEqual([]);
    async function* rows() {
      yield [
        { id: "m1", fighter_id: "f1", text: "apple" },
        { id: "m2", fighter_id: "f1", text: "banana" },
      ];
    }
    expect(await next.catchUp("memory", rows())).toBe(2);
    await next.idle();
    expect(otherCalls.flat().sort()).toEqual(["apple", "apricot", "banana"]);
    // The same catch-up again finds nothing missing.
    expect(await next.catchUp("memory", rows())).toBe(0);
    next.close();
  }, 20_000);
});
