import { describe, expect, it } from "vitest";
import { failure } from "../test/helpers/provider.js";
import { checkEmbeddings } from "./provider-errors.js";

const check = (vectors: (number[] | Float32Array | undefined)[] | undefined, dimensions?: number) =>
  failure(Promise.resolve().then(() => checkEmbeddings("p", { input: ["a", "b"], dimensions }, vectors)));

describe("checkEmbeddings", () => {
  it("passes one vector per input, all of one length, as plain arrays", () => {
    expect(checkEmbeddings("p", { input: ["a", "b"] }, [new Float32Array([0.5, 1]), [1, 0]])).toEqual([
      [0.5, 1],
      [1, 0],
    ]);
    expect(checkEmbeddings("p", { input: [] }, [])).toEqual([]);
  });

  it("refuses a count off, a hole, a length off, and a number that is not finite: not retryable", async () => {
    const holed: (number[] | undefined)[] = new Array(2);
    holed[1] = [1];
    const cases: [Promise<{ message: string; extra: Record<string, unknown> }>, string][] = [
      [check([[1]]), "p: the embedding reply held 1 vectors for 2 inputs"],
      [check(undefined), "p: the embedding reply held no vectors for 2 inputs"],
      [check(holed), "p: the embedding reply had no vector at 0"],
      [check([[1, 2], [1]]), "p: the embedding reply had a vector of 1 numbers at 1, not 2"],
      [
        check(
          [
            [1, 2],
            [1, 2],
          ],
          3,
        ),
        "p: the embedding reply had a vector of 2 numbers at 0, not 3",
      ],
      [
        check([
          [1, Number.NaN],
          [1, 2],
        ]),
        "p: the embedding reply had a number that is not finite in vector 0",
      ],
    ];
    for (const [pending, message] of cases) {
      const err = await pending;
      expect(err.message).toBe(message);
      expect(err.extra).toEqual({ provider: "p", retryable: false });
    }
  });
});
