import { describe, expect, it } from "vitest";
import type { TroopMember } from "../../sdk/index.js";
import { contentWords } from "../words.js";
import { CAPABILITY_KEYWORDS, pickSpecialist, SPECIALIST_WEIGHTS, scoreMembers } from "./specialist-score.js";

function member(name: string, extra: Partial<TroopMember> = {}): TroopMember {
  return { id: `id-${name}`, name, description: "", capabilities: [], skills: [], ...extra };
}

const researcher = member("researcher", {
  description: "Finds sources and summarizes them",
  capabilities: ["network"],
  skills: ["web-research"],
});
const operator = member("operator", {
  description: "Runs builds and maintains servers",
  capabilities: ["shell_exec", "file_read"],
  skills: ["git-workflow"],
});
const writer = member("writer", { description: "Writes clear reports", capabilities: ["file_write"] });

describe("contentWords", () => {
  it("keeps every distinct content word, lowercased, in order, past eight words", () => {
    expect(contentWords("Fetch the Page, then fetch one two three four five six seven eight nine")).toEqual([
      "fetch",
      "page",
      "then",
      "one",
      "two",
      "three",
      "four",
      "five",
      "six",
      "seven",
      "eight",
      "nine",
    ]);
  });
});

describe("scoreMembers", () => {
  it("weighs capability keywords 3, skill words 2 and description or name words 1, per task word", () => {
    expect(SPECIALIST_WEIGHTS).toEqual({ capability: 3, skill: 2, description: 1 });
    const [score] = scoreMembers("Research the web for sources", [researcher]);
    // web: network keyword (3) + skill word (2); research: skill word (2); sources: description (1).
    expect(score).toEqual({ fighter_id: "id-researcher", score: 8, matched: ["research", "web", "sources"] });
  });

  it("matches singular and plural forms", () => {
    const [score] = scoreMembers("read these files", [member("m", { capabilities: ["file_read"] })]);
    expect(score?.matched).toEqual(["read", "files"]);
    expect(score?.score).toBe(6);
  });

  it("gives a capability type from a plugin the words of its name, and full_access none", () => {
    expect(CAPABILITY_KEYWORDS.full_access).toEqual([]);
    const scores = scoreMembers("query github issues", [
      member("a", { capabilities: ["github"] }),
      member("b", { capabilities: ["full_access"] }),
    ]);
    expect(scores.map((s) => s.score)).toEqual([3, 0]);
  });

  it("is deterministic: the same task and members give the same scores", () => {
    const task = "Build the project with the shell script and write a report";
    expect(scoreMembers(task, [researcher, operator, writer])).toEqual(
      scoreMembers(task, [researcher, operator, writer]),
    );
  });
});

describe("pickSpecialist", () => {
  it("chooses the highest score and says why", () => {
    const { member: chosen, reason } = pickSpecialist("Compile the build with the shell script", [
      researcher,
      operator,
      writer,
    ]);
    expect(chosen.name).toBe("operator");
    expect(reason.chosen).toBe("id-operator");
    expect(reason.scores.map((s) => s.fighter_id)).toEqual(["id-researcher", "id-operator", "id-writer"]);
    expect(reason.scores[1]).toEqual({
      fighter_id: "id-operator",
      score: 13,
      matched: ["compile", "build", "shell", "script"],
    });
    expect(reason.text).toBe("operator scored highest (13) on compile, build, shell, script.");
  });

  it("breaks a tie by the troop's order", () => {
    const a = member("alpha", { capabilities: ["network"] });
    const b = member("beta", { capabilities: ["network"] });
    expect(pickSpecialist("search the web", [a, b]).member.name).toBe("alpha");
    const { member: chosen, reason } = pickSpecialist("search the web", [b, a]);
    expect(chosen.name).toBe("beta");
    expect(reason.text).toBe(
      "beta scored highest (6) on search, web, tied with alpha, and was chosen as the earliest in the troop's order.",
    );
  });

  it("chooses the first member when nobody matches, and says so", () => {
    const { member: chosen, reason } = pickSpecialist("Compose a sonnet", [writer, researcher]);
    expect(chosen.name).toBe("writer");
    expect(reason.scores.every((s) => s.score === 0)).toBe(true);
    expect(reason.text).toContain("so writer, the first member, was chosen");
  });

  it("refuses an empty troop", () => {
    expect(() => pickSpecialist("anything", [])).toThrow(RangeError);
  });
});
