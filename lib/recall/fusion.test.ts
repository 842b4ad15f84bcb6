import { describe, expect, it } from "vitest";
import { closeness, diverse, fuse, RRF_K, wordOverlap } from "./fusion.js";

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
