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

const members = [member("ann", { description: "researches" }), member("bob")];

async function leaderWorker() {
  const strategy = await resolveStrategy(plugin, "leader_worker");
  if (!strategy) throw new Error("strategy-leader-worker did not resolve leader_worker");
  return strategy;
}

const plan = (...tasks: string[]) => JSON.stringify({ subtasks: tasks.map((task) => ({ task })) });

/** The leader decomposes with `decompositions` in turn; workers answer `done: <subtask>`; synthesis "final". */
function script(decompositions: ScriptedReply[], work: (call: ScriptedCall) => ScriptedReply = () => "") {
  let asked = 0;
  return (call: ScriptedCall): ScriptedReply => {
    if (call.role === "decompose") return decompositions[asked++] ?? "nothing more scripted";
    if (call.role === "synthesize") return "final";
    const part = /Your part:\n(.*)\n/.exec(call.input)?.[1] ?? "?";
    return work(call) || `done: ${part}`;
  };
}

describe("strategy-leader-worker", () => {
  it("contributes and resolves `leader_worker` only", async () => {
    expect(checkedManifest(import.meta.dirname).contributes?.strategies).toEqual(["leader_worker"]);
    expect((await leaderWorker()).name).toBe("leader_worker");
    expect(await resolveStrategy(plugin, "round_robin")).toBeUndefined();
  });

  it("hands subtasks to members in order, cycling, in parallel up to max_parallel, then synthesizes", async () => {
    const scripted = scriptedTask({
      members,
      max_parallel: 2,
      reply: script([plan("find sources", "outline", "write intro")]),
    });
    expect(await (await leaderWorker()).run(scripted.task)).toEqual({ result: "final" });
    const decompose = scripted.calls[0];
    expect(decompose?.fighterId).toBe("id-leader");
    expect(decompose?.input).toContain("1. ann — researches\n2. bob");
    expect(decompose?.input).toContain(
      'Answer with JSON only: {"subtasks": [{"task": "<a self-contained subtask>"}]}',
    );
    const work = scripted.calls.filter((c) => c.role === "work");
    expect(work.map((c) => c.fighterId)).toEqual(["id-ann", "id-bob", "id-ann"]);
    expect(work[1]?.input).toContain(`The whole task:\n${scripted.task.task}`);
    expect(scripted.maxActive()).toBe(2);
    const synthesis = scripted.calls.at(-1);
    expect(synthesis?.role).toBe("synthesize");
    expect(synthesis?.fighterId).toBe("id-leader");
    expect(synthesis?.input).toContain("Subtask 2 (bob): outline\nResult:\ndone: outline");
  });

  it("asks again after an invalid decomposition and goes on with the valid one", async () => {
    const scripted = scriptedTask({ members, reply: script(['{"subtasks": []}', plan("only part")]) });
    expect(await (await leaderWorker()).run(scripted.task)).toEqual({ result: "final" });
    expect(scripted.calls.map((c) => c.role)).toEqual(["decompose", "decompose", "work", "synthesize"]);
  });

  it("fails with VALIDATION_FAILED after two invalid decompositions, starting no work", async () => {
    const tooMany = plan(...Array.from({ length: 9 }, (_, i) => `part ${i}`));
    const scripted = scriptedTask({ members, reply: script(["not json", tooMany]) });
    expect(await (await leaderWorker()).run(scripted.task)).toEqual({
      error: {
        code: "VALIDATION_FAILED",
        message:
          'the leader returned an invalid decomposition twice: not the JSON asked for: "answer.subtasks" must NOT have more than 8 items',
      },
    });
    expect(scripted.calls.map((c) => c.role)).toEqual(["decompose", "decompose"]);
  });

  it("keeps the leader's own error when its turn fails", async () => {
    const scripted = scriptedTask({
      members,
      reply: script([{ code: "PROVIDER_ERROR", message: "model down" }]),
    });
    expect(await (await leaderWorker()).run(scripted.task)).toEqual({
      error: { code: "PROVIDER_ERROR", message: "the leader's decomposition failed: model down" },
    });
    expect(scripted.calls.map((c) => c.role)).toEqual(["decompose"]);
  });

  it("names failed subtasks in the synthesis", async () => {
    const scripted = scriptedTask({
      members,
      reply: script([plan("a", "b")], ({ fighterId }) =>
        fighterId === "id-bob" ? { code: "PROVIDER_TIMEOUT", message: "too slow" } : "",
      ),
    });
    expect(await (await leaderWorker()).run(scripted.task)).toEqual({ result: "final" });
    const synthesis = scripted.calls.at(-1)?.input ?? "";
    expect(synthesis).toContain("Subtask 1 (ann): a\nResult:\ndone: a");
    expect(synthesis).toContain("Subtask 2 (bob): b\nFAILED: too slow");
  });

  it("fails with no synthesis when every subtask fails", async () => {
    const scripted = scriptedTask({
      members,
      reply: script([plan("a", "b")], () => ({ code: "PROVIDER_ERROR", message: "down" })),
    });
    expect(await (await leaderWorker()).run(scripted.task)).toEqual({
      error: {
        code: "PROVIDER_ERROR",
        message: "every subtask failed (subtask 1 (ann): down; subtask 2 (bob): down)",
      },
    });
    expect(scripted.calls.some((c) => c.role === "synthesize")).toBe(false);
  });

  it("starts no step once the task is cancelled", async () => {
    const scripted = scriptedTask({
      members,
      max_parallel: 1,
      reply: script([plan("a", "b", "c")], (call) => {
        if (call.fighterId === "id-bob") scripted.abort();
        return "";
      }),
    });
    const outcome = await (await leaderWorker()).run(scripted.task);
    expect(outcome.error?.code).toBe("CANCELLED");
    expect(scripted.calls.map((c) => c.role)).toEqual(["decompose", "work", "work"]);
  });
});
