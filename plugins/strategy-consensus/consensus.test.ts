import { describe, expect, it } from "vitest";
import {
  checkedManifest,
  member,
  resolveStrategy,
  type ScriptedCall,
  type ScriptedReply,
  scriptedTask,
} from "../../test/helpers/scripted-task.js";
import plugin from "./index.js";

const members = [member("ann"), member("bob"), member("cid"), member("dee")];

async function consensus() {
  const strategy = await resolveStrategy(plugin, "consensus");
  if (!strategy) throw new Error("strategy-consensus did not resolve consensus");
  return strategy;
}

const vote = (choice: number, reason = "best") => JSON.stringify({ choice, reason });

/** Each member answers `answer <name>`; votes and the tie-break come from the tables given. */
function script(votes: Record<string, ScriptedReply>, tieBreak: ScriptedReply = vote(1)) {
  return ({ fighterId, role }: ScriptedCall): ScriptedReply => {
    if (role === "answer") return `answer ${fighterId.slice(3)}`;
    if (role === "tie_break") return tieBreak;
    return votes[fighterId] ?? "no vote scripted";
  };
}

describe("strategy-consensus", () => {
  it("contributes and resolves `consensus` only", async () => {
    expect(checkedManifest(import.meta.dirname).contributes?.strategies).toEqual(["consensus"]);
    expect((await consensus()).name).toBe("consensus");
    expect(await resolveStrategy(plugin, "specialist")).toBeUndefined();
  });

  it("lets the majority win and records every vote with its 0-based choice", async () => {
    const scripted = scriptedTask({
      members: members.slice(0, 3),
      max_parallel: 2,
      reply: script({ "id-ann": vote(2, "clearer"), "id-bob": vote(2), "id-cid": vote(1) }),
    });
    const outcome = await (await consensus()).run(scripted.task);
    expect(outcome).toEqual({
      result: "answer bob",
      votes: [
        { fighter_id: "id-ann", choice: 1, reason: "clearer" },
        { fighter_id: "id-bob", choice: 1, reason: "best" },
        { fighter_id: "id-cid", choice: 0, reason: "best" },
      ],
    });
    expect(scripted.maxActive()).toBe(2);
    const ballot = scripted.calls.find((c) => c.role === "vote")?.input ?? "";
    expect(ballot).toContain("Answer 1: answer ann");
    expect(ballot).toContain("Answer 3: answer cid");
    expect(ballot).toContain('Answer with JSON only: {"choice": <the answer\'s number, 1 to 3>');
    expect(scripted.calls.some((c) => c.role === "tie_break")).toBe(false);
  });

  it("has the leader break a tie among the tied answers only", async () => {
    const scripted = scriptedTask({
      members,
      reply: script(
        { "id-ann": vote(1), "id-bob": vote(3), "id-cid": vote(3), "id-dee": vote(1) },
        vote(2, "sharper"),
      ),
    });
    const outcome = await (await consensus()).run(scripted.task);
    expect(outcome.result).toBe("answer cid");
    expect(outcome.votes?.at(-1)).toEqual({
      fighter_id: "id-leader",
      choice: 2,
      reason: "sharper",
      tie_break: true,
    });
    const tieBreak = scripted.calls.filter((c) => c.role === "tie_break");
    expect(tieBreak.map((c) => c.fighterId)).toEqual(["id-leader"]);
    expect(tieBreak[0]?.input).toContain("Answer 1: answer ann");
    expect(tieBreak[0]?.input).toContain("Answer 2: answer cid");
    expect(tieBreak[0]?.input).not.toContain("answer bob");
    expect(tieBreak[0]?.input).toContain("1 to 2>");
  });

  it("records a vote that fails twice with no choice, and counts one fixed on the second try", async () => {
    let bobAsked = 0;
    const scripted = scriptedTask({
      members: members.slice(0, 3),
      reply: (call) => {
        if (call.role === "vote" && call.fighterId === "id-bob")
          return bobAsked++ === 0 ? "I pick 2" : vote(2);
        if (call.role === "vote" && call.fighterId === "id-cid") return vote(7);
        return script({ "id-ann": vote(2) })(call);
      },
    });
    const outcome = await (await consensus()).run(scripted.task);
    expect(outcome.result).toBe("answer bob");
    expect(outcome.votes).toEqual([
      { fighter_id: "id-ann", choice: 1, reason: "best" },
      { fighter_id: "id-bob", choice: 1, reason: "best" },
      {
        fighter_id: "id-cid",
        choice: null,
        error: 'no valid vote in two attempts (not the JSON asked for: "answer.choice" must be <= 3)',
      },
    ]);
    expect(scripted.calls.filter((c) => c.role === "vote").map((c) => c.fighterId)).toEqual([
      "id-ann",
      "id-bob",
      "id-cid",
      "id-bob",
      "id-cid",
    ]);
  });

  it("picks the lowest-numbered tied answer, and says so, when the leader's tie-break fails", async () => {
    const scripted = scriptedTask({
      members: members.slice(0, 2),
      reply: script({ "id-ann": vote(2), "id-bob": vote(1) }, { code: "PROVIDER_ERROR", message: "down" }),
    });
    const outcome = await (await consensus()).run(scripted.task);
    expect(outcome.result).toBe("answer ann");
    expect(outcome.votes?.at(-1)).toEqual({
      fighter_id: "id-leader",
      choice: 0,
      tie_break: true,
      error: "the vote failed: down; answer 1, the lowest-numbered tied answer, was chosen",
    });
  });

  it("fails, choosing nothing, when no vote is valid, the leader's tie-break included", async () => {
    const scripted = scriptedTask({
      members: members.slice(0, 2),
      reply: script({ "id-ann": "I like both", "id-bob": "the second" }, "no idea"),
    });
    const outcome = await (await consensus()).run(scripted.task);
    expect(outcome.result).toBeUndefined();
    expect(outcome.error?.code).toBe("VALIDATION_FAILED");
    expect(outcome.error?.message).toMatch(
      /^no answer was chosen: every vote, the leader's tie-break included, failed \(ann: not the JSON asked for: .+; bob: .+; leader \(tie-break\): .+\)$/,
    );
    expect(outcome.votes?.map((v) => v.choice)).toEqual([null, null, null]);
  });

  it("numbers only the successful answers, and every member still votes", async () => {
    const scripted = scriptedTask({
      members: members.slice(0, 3),
      reply: (call) =>
        call.role === "answer" && call.fighterId === "id-bob"
          ? { code: "PROVIDER_ERROR", message: "down" }
          : script({ "id-ann": vote(2), "id-bob": vote(2), "id-cid": vote(1) })(call),
    });
    const outcome = await (await consensus()).run(scripted.task);
    expect(outcome.result).toBe("answer cid");
    expect(outcome.votes?.map((v) => v.choice)).toEqual([1, 1, 0]);
    expect(scripted.calls.find((c) => c.role === "vote")?.input).toContain("Answer 2: answer cid");
  });

  it("lets a single answer win without a vote", async () => {
    const scripted = scriptedTask({
      members: members.slice(0, 2),
      reply: (call) =>
        call.fighterId === "id-ann" ? { code: "PROVIDER_ERROR", message: "down" } : script({})(call),
    });
    expect(await (await consensus()).run(scripted.task)).toEqual({ result: "answer bob", votes: [] });
    expect(scripted.calls.map((c) => c.role)).toEqual(["answer", "answer"]);
  });

  it("fails with no vote when no member answers", async () => {
    const scripted = scriptedTask({
      members: members.slice(0, 2),
      reply: () => ({ code: "PROVIDER_ERROR", message: "down" }),
    });
    const outcome = await (await consensus()).run(scripted.task);
    expect(outcome.error).toEqual({
      code: "PROVIDER_ERROR",
      message: "every member's answer failed (ann: down; bob: down)",
    });
    expect(scripted.calls.every((c) => c.role === "answer")).toBe(true);
  });

  it("starts no step once the task is cancelled, keeping the votes cast", async () => {
    const scripted = scriptedTask({
      members,
      max_parallel: 1,
      reply: (call, abort) => {
        if (call.role === "vote" && call.fighterId === "id-bob") abort();
        return script({ "id-ann": vote(1), "id-bob": vote(2) })(call);
      },
    });
    const outcome = await (await consensus()).run(scripted.task);
    expect(outcome.error?.code).toBe("CANCELLED");
    expect(outcome.votes?.map((v) => v.fighter_id)).toEqual(["id-ann", "id-bob"]);
    expect(scripted.calls.filter((c) => c.role !== "answer").map((c) => c.fighterId)).toEqual([
      "id-ann",
      "id-bob",
    ]);
  });
});
