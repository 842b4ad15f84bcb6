import { describe, expect, it } from "vitest";
import { decayedScore, queryWords } from "../../sdk/kits/text.js";
import type { Memories, MemoryMatch } from "./memories.js";
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

/** An in-memory stand-in for the two store calls recall makes, to check ranking and reinforcement. */
function fakeStore(memories: MemoryMatch[]) {
  const rescored: { id: string; score0: number }[] = [];
  const store = {
    candidates: async () => memories,
    rescore: async (updates: { id: string; score0: number }[]) => {
      rescored.push(...updates);
    },
  } as unknown as Memories;
  return { store, rescored };
}

function memory(id: string, matches: number, score0: number, ageDays: number): MemoryMatch {
  const at = new Date(T0 - ageDays * DAY).toISOString();
  return { id, fighter_id: "f", key: id, value: id, score0, scored_at: at, created_at: at, matches };
}

describe("recallMemories", () => {
  const decay = { rate_per_day: 0.1, reinforce_on_access: 0.2, forget_below: 0.05 };

  it("ranks by words matched times current score, and forgets what decayed away", async () => {
    const { store } = fakeStore([
      memory("fresh-one-word", 1, 1, 0),
      memory("older-two-words", 2, 1, 5),
      memory("forgotten", 3, 1, 40),
    ]);
    const recalled = await recallMemories(store, "f", "anything", 10, decay, T0);
    // Two words × e^−0.5 ≈ 1.21 beats one word × 1; e^−4 ≈ 0.018 is below forget_below.
    expect(recalled.map((r) => r.key)).toEqual(["older-two-words", "fresh-one-word"]);
    expect(recalled.map((r) => r.key)).not.toContain("forgotten");
  });

  it("reinforces what it returns, from its current score", async () => {
    const { store, rescored } = fakeStore([memory("m", 1, 1, 10)]);
    const [recalled] = await recallMemories(store, "f", "m", 10, decay, T0);
    expect(rescored).toEqual([{ id: "m", score0: Math.exp(-1) + 0.2 }]);
    expect(recalled?.score).toBeCloseTo(Math.exp(-1) + 0.2, 4);
  });

  it("returns at most `limit`", async () => {
    const { store } = fakeStore([memory("a", 1, 1, 0), memory("b", 1, 1, 1), memory("c", 1, 1, 2)]);
    expect((await recallMemories(store, "f", "x", 2, decay, T0)).map((r) => r.key)).toEqual(["a", "b"]);
  });
});
