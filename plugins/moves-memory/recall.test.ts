import { describe, expect, it } from "vitest";
import type { Embeddings } from "../../sdk/kits/recall.js";
import { decayedScore, queryWords } from "../../sdk/kits/text.js";
import type { Memories, MemoryRecord } from "./memories.js";
import { recallMemories } from "./recall.js";

const DAY = 86_400_000;
const T0 = Date.parse("2026-01-01T00:00:00Z");

describe("decay", () => {
  it("follows score0 · e^(−rate · days)", () => {
    expect(decayedScore(1, new Date(T0).toISOString(), T0, 0.05)).toBe(1);
    expect(decayedScore(1, new Date(T0).toISOString(), T0 + 10 * DAY, 0.05)).toBeCloseTo(Math.exp(-0.5), 10);
    expect(decayedScore(2, new Date(T0).toISOString(), T0 + 2 * DAY, 0.5)).toBeCloseTo(2 * Math.exp(-1), 10);
    // Half-life at 0.05/day is ln 2 / 0.05 ≈ 13.86 days.
    expect(decayedScore(1, new Date(T0).toISOString(), T0 + (Math.LN2 / 0.05) * DAY, 0.05)).toBeCloseTo(
      0.5,
      10,
    );
  });

  it("never grows for a score set in the future", () => {
    expect(decayedScore(1, new Date(T0 + DAY).toISOString(), T0, 0.05)).toBe(1);
  });
});

describe("queryWords", () => {
  it("keeps content words, lowercased, deduplicated, at most eight", () => {
    expect(queryWords("What is my favourite Tea? tea!")).toEqual(["favourite", "tea"]);
    expect(queryWords("a b c")).toEqual([]);
    expect(queryWords("one two three four five six seven eight nine ten")).toHaveLength(8);
    expect(queryWords("café 42")).toEqual(["café", "42"]);
  });
});

/** An in-memory stand-in for the store calls recall makes: `words` ranked best first, `all` by id. */
function fakeStore(words: MemoryRecord[], all: MemoryRecord[] = words) {
  const rescored: { id: string; score0: number }[] = [];
  const store = {
    byWords: async () => words,
    byIds: async (_f: string, ids: readonly string[]) => all.filter((m) => ids.includes(m.id)),
    rescore: async (updates: { id: string; score0: number }[]) => {
      rescored.push(...updates);
    },
  } as unknown as Memories;
  return { store, rescored };
}

function memory(id: string, score0: number, ageDays: number, value = id): MemoryRecord {
  const at = new Date(T0 - ageDays * DAY).toISOString();
  return { id, fighter_id: "f", key: id, value, score0, scored_at: at, created_at: at, written_at: at };
}

/** Meaning as a stand-in: the ids in the order given, their vectors by id. */
function meaning(hits: string[], vectors: Record<string, number[]> = {}) {
  return {
    floor: 0,
    search: async () => hits.map((id, i) => ({ id, score: 1 - i / 10 })),
    vectorOf: (_k: string, _f: string, id: string) =>
      vectors[id] ? Float32Array.from(vectors[id]) : undefined,
  } as unknown as Pick<Embeddings, "search" | "vectorOf" | "floor">;
}

describe("recallMemories", () => {
  const decay = { rate_per_day: 0.1, reinforce_on_access: 0.2, forget_below: 0.05 };
  const keys = (r: { memories: { key: string }[] }) => r.memories.map((m) => m.key);

  it("by words alone: the word rank times current relevance, leaving out what decayed away", async () => {
    const { store } = fakeStore([memory("first", 1, 5), memory("second", 1, 0), memory("forgotten", 1, 40)]);
    const recalled = await recallMemories(store, undefined, "f", "anything", 10, decay, T0);
    // 1/61 × e^−0.5 ≈ 0.0099 < 1/62 × 1 ≈ 0.0161: the fresher second match wins; e^−4 is forgotten.
    expect(keys(recalled)).toEqual(["second", "first"]);
    expect(recalled.by).toBe("words");
  });

  it("fuses meaning with words: what only the meaning finds is recalled, what both find ranks first", async () => {
    const lisbon = memory("sister_home", 1, 1, "Ada moved to Lisbon");
    const tea = memory("tea", 1, 2, "Drinks green tea");
    const dog = memory("dog", 1, 1, "A dog called Rex");
    const { store } = fakeStore([tea, dog], [tea, dog, lisbon]);
    const recalled = await recallMemories(
      store,
      meaning(["sister_home", "dog"]),
      "f",
      "where does my sister live",
      3,
      decay,
      T0,
    );
    expect(keys(recalled)).toEqual(["dog", "sister_home", "tea"]);
    expect(recalled.by).toBe("words+meaning");
    // When the embeddings do not answer in time, recall is by words, and says so.
    const late = { floor: 0, search: async () => undefined, vectorOf: () => undefined } as unknown as Pick<
      Embeddings,
      "search" | "vectorOf" | "floor"
    >;
    expect(await recallMemories(store, late, "f", "x", 3, decay, T0)).toMatchObject({ by: "words" });
  });

  it("puts an updated fact ahead of the older one about the same thing", async () => {
    const old = memory("ada_city", 2, 3, "Ada moved to Lisbon");
    const updated = memory("ada_new_city", 1, 0, "Ada moved again, to Porto");
    const { store } = fakeStore([old, updated]);
    const vectors = { ada_city: [1, 0.1, 0], ada_new_city: [1, 0.2, 0] };
    const recalled = await recallMemories(
      store,
      meaning(["ada_city", "ada_new_city"], vectors),
      "f",
      "ada",
      5,
      decay,
      T0,
    );
    expect(keys(recalled)).toEqual(["ada_new_city", "ada_city"]);
  });

  it("reinforces what it returns, from its current score, and passes on a stored taint", async () => {
    const m = { ...memory("m", 1, 10), taint: { kind: "web" as const, detail: "https://evil.example" } };
    const { store, rescored } = fakeStore([m]);
    const recalled = await recallMemories(store, undefined, "f", "m", 10, decay, T0);
    await recalled.reinforced;
    expect(rescored).toEqual([{ id: "m", score0: Math.exp(-1) + 0.2 }]);
    expect(recalled.memories[0]?.score).toBeCloseTo(Math.exp(-1) + 0.2, 4);
    expect(recalled.taint).toEqual([{ kind: "web", detail: "https://evil.example" }]);
  });

  it("returns at most `limit`", async () => {
    const { store } = fakeStore([memory("a", 1, 0), memory("b", 1, 1), memory("c", 1, 2)]);
    expect(keys(await recallMemories(store, undefined, "f", "x", 2, decay, T0))).toEqual(["a", "b"]);
  });
});
