import { describe, expect, it } from "vitest";
import { checkedManifest, member, resolveStrategy, scriptedTask } from "../../test/helpers/scripted-task.js";
import plugin from "./index.js";

const members = [member("drafter"), member("editor"), member("polisher")];

async function pipeline() {
  const strategy = await resolveStrategy(plugin, "pipeline");
  if (!strategy) throw new Error("strategy-pipeline did not resolve pipeline");
  return strategy;
}

describe("strategy-pipeline", () => {
  it("contributes and resolves `pipeline` only", async () => {
    expect(checkedManifest(import.meta.dirname).contributes?.strategies).toEqual(["pipeline"]);
    expect((await pipeline()).name).toBe("pipeline");
    expect(await resolveStrategy(plugin, "broadcast")).toBeUndefined();
  });

  it("gives member 1 the task and each next member the previous output, framed with the task", async () => {
    const scripted = scriptedTask({ members, reply: ({ fighterId }) => `out of ${fighterId}` });
    const outcome = await (await pipeline()).run(scripted.task);
    expect(outcome).toEqual({ result: "out of id-polisher" });
    expect(scripted.calls.map((c) => [c.fighterId, c.role])).toEqual([
      ["id-drafter", "work"],
      ["id-editor", "work"],
      ["id-polisher", "work"],
    ]);
    expect(scripted.calls[0]?.input).toBe(scripted.task.task);
    const second = scripted.calls[1]?.input ?? "";
    expect(second).toContain(`step 2 of 3 in a pipeline working on this task:\n${scripted.task.task}`);
    expect(second).toContain("The output of step 1 (drafter), which is your input:\nout of id-drafter");
    expect(second).not.toContain("final result");
    expect(scripted.calls[2]?.input).toContain("out of id-editor");
    expect(scripted.calls[2]?.input).toContain("Your output is the pipeline's final result.");
  });

  it("stops at a failed step, naming the member and its error, and runs no later member", async () => {
    const scripted = scriptedTask({
      members,
      reply: ({ fighterId }) =>
        fighterId === "id-editor" ? { code: "PROVIDER_ERROR", message: "the model is down" } : "text",
    });
    const outcome = await (await pipeline()).run(scripted.task);
    expect(outcome).toEqual({
      error: { code: "PROVIDER_ERROR", message: "editor (step 2 of 3) failed: the model is down" },
    });
    expect(scripted.calls.map((c) => c.fighterId)).toEqual(["id-drafter", "id-editor"]);
  });

  it("starts no step once the task is cancelled", async () => {
    const scripted = scriptedTask({
      members,
      reply: ({ fighterId }, abort) => {
        if (fighterId === "id-editor") abort();
        return "text";
      },
    });
    const outcome = await (await pipeline()).run(scripted.task);
    expect(outcome.error?.code).toBe("CANCELLED");
    expect(scripted.calls.map((c) => c.fighterId)).toEqual(["id-drafter", "id-editor"]);
  });

  it("fails a troop without members", async () => {
    const scripted = scriptedTask({ members: [], reply: () => "never" });
    expect((await (await pipeline()).run(scripted.task)).error?.code).toBe("VALIDATION_FAILED");
    expect(scripted.calls).toEqual([]);
  });
});
