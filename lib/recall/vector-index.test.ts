import { describe, expect, it } from "vitest";
import { cosine, decodeVector, EXACT_LIMIT, encodeVector, normalise, VectorIndex } from "./vector-index.js";

/** A seeded generator, so a failure reproduces. */
function random(seed: number): () => number {
  let x = seed;
  return () => {
    x = (x * 1_103_515_245 + 12_345) % 2_147_483_648;
    return x / 2_147_483_648 - 0.5;
  };
}

const vector = (next: () => number, dims: number) => Float32Array.from({ length: dims }, next);

describe("vectors as stored", () => {
  it("round-trip through int8 within 1% in cosine", () => {
    const next = random(1);
    for (let i = 0; i < 20; i++) {
      const v = vector(next, 384);
      expect(cosine(decodeVector(encodeVector(v)), normalise(v))).toBeGreaterThan(0.99);
    }
  });

  it("normalise leaves a zero vector zero", () => {
    expect([...normalise([0, 0, 0])]).toEqual([0, 0, 0]);
  });
});

describe("VectorIndex", () => {
  it("finds the nearest by cosine, replaces and removes by id, refuses another size", () => {
    const index = new VectorIndex(3);
    index.upsert("east", [1, 0, 0]);
    index.upsert("north", [0, 1, 0]);
    index.upsert("north-east", [1, 1, 0]);
    expect(index.search([1, 0.1, 0], 2).map((h) => h.id)).toEqual(["east", "north-east"]);
    index.upsert("east", [0, 0, 1]);
    expect(index.search([1, 0.1, 0], 1).map((h) => h.id)).toEqual(["north-east"]);
    index.remove("north-east");
    expect(index.size).toBe(2);
    expect(index.search([1, 0.1, 0], 3).map((h) => h.id)).toEqual(["north", "east"]);
    expect(index.search([1, 0.1, 0], 3, (id) => id !== "north").map((h) => h.id)).toEqual(["east"]);
    expect(() => index.upsert("x", [1, 0])).toThrow(RangeError);
    expect(index.search([1, 0], 3)).toEqual([]);
  });

  it("past the exact limit, the sketch's candidates hold the true nearest neighbours", () => {
    const dims = 128;
    const next = random(7);
    const centres = Array.from({ length: 400 }, () => vector(next, dims));
    const count = Math.ceil(EXACT_LIMIT / dims) + 2_000;
    const index = new VectorIndex(dims);
    const all: Float32Array[] = [];
    for (let i = 0; i < count; i++) {
      const c = centres[i % centres.length] as Float32Array;
      const v = Float32Array.from(c, (x) => x + next() * 0.8);
      all.push(normalise(v));
      index.upsert(`v${i}`, v);
    }
    let agree = 0;
    for (let q = 0; q < 20; q++) {
      const query = Float32Array.from(all[q * 97] as Float32Array, (x) => x + next() * 0.05);
      const exact = all
        .map((v, i) => ({ id: `v${i}`, score: cosine(v, normalise(query)) }))
        .sort((a, b) => b.score - a.score)
        .slice(0, 5)
        .map((h) => h.id);
      agree += index.search(query, 5).filter((h) => exact.includes(h.id)).length;
    }
    // The sketch prefilter keeps at least 95% of the exact top five.
    expect(agree / 100).toBeGreaterThanOrEqual(0.95);
  });
});
