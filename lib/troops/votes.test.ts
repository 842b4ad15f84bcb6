import { describe, expect, it } from "vitest";
import { tallyVotes } from "./votes.js";

const votes = (...choices: (number | null)[]) => choices.map((choice) => ({ choice }));

describe("tallyVotes", () => {
  it("counts votes per answer and finds a clear winner", () => {
    expect(tallyVotes(votes(1, 0, 1), 3)).toEqual({ counts: [1, 2, 0], top: [1] });
  });

  it("reports every answer sharing the most votes as a tie, lowest first", () => {
    expect(tallyVotes(votes(2, 0, 0, 2, 1), 3)).toEqual({ counts: [2, 1, 2], top: [0, 2] });
  });

  it("ignores failed votes and choices outside the answers", () => {
    expect(tallyVotes(votes(null, 5, -1, 1.5, 1), 2)).toEqual({ counts: [0, 1], top: [1] });
  });

  it("ties every answer when no vote counted", () => {
    expect(tallyVotes(votes(null, null), 3)).toEqual({ counts: [0, 0, 0], top: [0, 1, 2] });
  });

  it("has no top answer when there are no answers", () => {
    expect(tallyVotes(votes(0), 0)).toEqual({ counts: [], top: [] });
  });
});
