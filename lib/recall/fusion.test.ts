import { describe, expect, it } from "vitest";
import { closeness, diverse, fuse, pick, RRF_K, wordOverlap } from "./fusion.js";

describe("fuse", () => {
  it("sums 1 / (K + rank) over the rankings", () => {
    const scores = fuse([{ ids: ["a", "b"] }, { ids: ["b", "c"] }]);
    expect(scores.get("b")).toBeCloseTo(1 / (RRF_K + 2) + 1 / (RRF_K + 1), 12);
    expect([...scores].sort((x, y) => y[1] - x[1]).map(([id]) => id)).toEqual(["b", "a", "c"]);
    expect(fuse([]).size).toBe(0);
  });

  it("scales a rank's share by its weight, and leaves out what weighs nothing", () => {
    const scores = fuse([{ ids: ["a", "b", "c"], weights: [0.5, 1, 0] }]);
    expect(scores.get("a")).toBeCloseTo(0.5 / (RRF_K + 1), 12);
    expect(scores.get("b")).toBeCloseTo(1 / (RRF_K + 2), 12);
    expect(scores.has("c")).toBe(false);
  });

  it("closeness counts a neighbour only above the floor, scaled to 0 … 1", () => {
    expect(closeness(0.1, 0.2)).toBe(0);
    expect(closeness(0.6, 0.2)).toBeCloseTo(0.5, 12);
    expect(closeness(1, 0.2)).toBe(1);
  });
});

describe("diverse", () => {
  it("leaves out a near-copy of what it already picked for a less relevant but different item", () => {
    const items = [
      { id: "lisbon", score: 1, text: "Ada moved to Lisbon" },
      { id: "lisbon-again", score: 0.95, text: "Ada moved to Lisbon!" },
      { id: "peanuts", score: 0.8, text: "allergic to peanuts" },
    ];
    const picked = diverse(
      items,
      2,
      (i) => i.score,
      (a, b) => wordOverlap(a.text, b.text),
    );
    expect(picked.map((i) => i.id)).toEqual(["lisbon", "peanuts"]);
    expect(
      diverse(
        items,
        5,
        (i) => i.score,
        () => 0,
      ).map((i) => i.id),
    ).toEqual(["lisbon", "lisbon-again", "peanuts"]);
  });

  it("wordOverlap is Jaccard over words, any case", () => {
    expect(wordOverlap("Tea time", "tea TIME")).toBe(1);
    expect(wordOverlap("tea", "")).toBe(0);
    expect(wordOverlap("a b", "b c")).toBeCloseTo(1 / 3, 12);
  });
});

describe("pick", () => {
  it("puts the newer of two results about the same thing first, looking each vector up once", () => {
    const items = [
      { id: "old", score: 1, text: "Ada moved to Lisbon", at: "2026-01-01" },
      { id: "new", score: 0.9, text: "Ada moved again, to Porto", at: "2026-02-01" },
      { id: "tea", score: 0.3, text: "green tea", at: "2026-03-01" },
    ];
    const vectors: Record<string, number[]> = { old: [1, 0], new: [1, 0.05], tea: [0, 1] };
    const looked: string[] = [];
    const picked = pick(items, 2, {
      score: (i) => i.score,
      id: (i) => i.id,
      vector: (id) => {
        looked.push(id);
        return Float32Array.from(vectors[id] ?? []);
      },
      text: (i) => i.text,
      writtenAt: (i) => i.at,
    });
    expect(picked.map((i) => i.id)).toEqual(["new", "old"]);
    expect(looked.length).toBe(new Set(looked).size);
  });
});
