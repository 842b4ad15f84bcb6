import { describe, expect, it } from "vitest";
import { checkedManifest, member, resolveStrategy, scriptedTask } from "../../test/helpers/scripted-task.js";
import plugin from "./index.js";

const members = [member("ann"), member("bob"), member("cid"), member("dee")];

async function broadcast() {
  const strategy = await resolveStrategy(plugin, "broadcast");
  if (!strategy) throw new Error("strategy-broadcast did not resolve broadcast");
  return strategy;
}

describe("strategy-broadcast", () => {
  it("contributes and resolves `broadcast` only", async () => {
    expect(checkedManifest(import.meta.dirname).contributes?.strategies).toEqual(["broadcast"]);
    expect((await broadcast()).name).toBe("broadcast");
    expect(await resolveStrategy(plugin, "pipeline")).toBeUndefined();
  });

  it("asks every member the same task, at most max_parallel at once, and returns the leader's synthesis", async () => {
    const scripted = scriptedTask({
      members,
      max_parallel: 2,
      reply: ({ fighterId, role }) => (role === "synthesize" ? "the synthesis" : `answer of ${fighterId}`),
    });
    const outcome = await (await broadcast()).run(scripted.task);
    expect(outcome).toEqual({ result: "the synthesis" });
    expect(scripted.maxActive()).toBe(2);
    const answers = scripted.calls.filter((c) => c.role === "answer");
    expect(answers.map((c) => c.fighterId)).toEqual(members.map((m) => m.id));
    expect(answers.every((c) => c.input === scripted.task.task)).toBe(true);
    const synthesis = scripted.calls.at(-1);
    expect(synthesis?.fighterId).toBe("id-leader");
    expect(synthesis?.role).toBe("synthesize");
    expect(synthesis?.input).toContain(scripted.task.task);
    for (const m of members) expect(synthesis?.input).toContain(`Answer from ${m.name}:\nanswer of ${m.id}`);
  });

  it("synthesizes from the answers that came when some members fail", async () => {
    const scripted = scriptedTask({
      members,
      reply: ({ fighterId, role }) => {
        if (role === "synthesize") return "from the rest";
        return fighterId === "id-bob" ? { code: "PROVIDER_TIMEOUT", message: "no reply in 60 s" } : "ok";
      },
    });
    expect(await (await broadcast()).run(scripted.task)).toEqual({ result: "from the rest" });
    const synthesis = scripted.calls.at(-1)?.input ?? "";
    expect(synthesis).not.toContain("Answer from bob");
    expect(synthesis).toContain("Answer from ann");
    expect(synthesis).toContain("No answer from: bob (no reply in 60 s).");
  });

  it("fails without a synthesis when every member fails", async () => {
    const scripted = scriptedTask({
      members: members.slice(0, 2),
      reply: ({ fighterId }) => ({ code: "PROVIDER_ERROR", message: `${fighterId} broke` }),
    });
    const outcome = await (await broadcast()).run(scripted.task);
    expect(outcome).toEqual({
      error: {
        code: "PROVIDER_ERROR",
        message: "every member's answer failed (ann: id-ann broke; bob: id-bob broke)",
      },
    });
    expect(scripted.calls.some((c) => c.role === "synthesize")).toBe(false);
  });

  it("fails when the synthesis fails", async () => {
    const scripted = scriptedTask({
      members,
      reply: ({ role }) => (role === "synthesize" ? { code: "PROVIDER_ERROR", message: "overloaded" } : "ok"),
    });
    expect(await (await broadcast()).run(scripted.task)).toEqual({
      error: { code: "PROVIDER_ERROR", message: "the synthesis by the leader (leader) failed: overloaded" },
    });
  });

  it("starts no step once the task is cancelled", async () => {
    const scripted = scriptedTask({
      members,
      max_parallel: 1,
      reply: ({ fighterId }, abort) => {
        if (fighterId === "id-bob") abort();
        return "ok";
      },
    });
    const outcome = await (await broadcast()).run(scripted.task);
    expect(outcome.error?.code).toBe("CANCELLED");
    expect(scripted.calls.map((c) => c.fighterId)).toEqual(["id-ann", "id-bob"]);
  });
});
