import { describe, expect, it } from "vitest";
import { checkedManifest, member, resolveStrategy, scriptedTask } from "../../test/helpers/scripted-task.js";
import plugin from "./index.js";

const members = [
  member("scribe", { description: "Writes reports", capabilities: ["file_write"] }),
  member("scout", { description: "Finds things online", capabilities: ["network"], skills: ["web-search"] }),
];

async function specialist() {
  const strategy = await resolveStrategy(plugin, "specialist");
  if (!strategy) throw new Error("strategy-specialist did not resolve specialist");
  return strategy;
}

describe("strategy-specialist", () => {
  it("contributes and resolves `specialist` only", async () => {
    expect(checkedManifest(import.meta.dirname).contributes?.strategies).toEqual(["specialist"]);
    expect((await specialist()).name).toBe("specialist");
    expect(await resolveStrategy(plugin, "consensus")).toBeUndefined();
  });

  it("gives the task to the best-matching member and keeps every score as the reason", async () => {
    const scripted = scriptedTask({
      members,
      task: "Search the web for the release date",
      reply: ({ fighterId }) => `answer of ${fighterId}`,
    });
    const outcome = await (await specialist()).run(scripted.task);
    expect(outcome.result).toBe("answer of id-scout");
    expect(outcome.reason).toEqual({
      chosen: "id-scout",
      text: "scout scored highest (10) on search, web.",
      scores: [
        { fighter_id: "id-scribe", score: 0, matched: [] },
        { fighter_id: "id-scout", score: 10, matched: ["search", "web"] },
      ],
    });
    expect(scripted.calls).toEqual([{ fighterId: "id-scout", input: scripted.task.task, role: "answer" }]);
  });

  it("fails when the chosen member fails, still giving the reason", async () => {
    const scripted = scriptedTask({
      members,
      task: "Write the report",
      reply: () => ({ code: "PROVIDER_ERROR", message: "down" }),
    });
    const outcome = await (await specialist()).run(scripted.task);
    expect(outcome.error).toEqual({
      code: "PROVIDER_ERROR",
      message: "scribe (the chosen specialist) failed: down",
    });
    expect(outcome.reason?.chosen).toBe("id-scribe");
  });

  it("starts no step for a cancelled task", async () => {
    const scripted = scriptedTask({ members, reply: () => "never" });
    scripted.abort();
    const outcome = await (await specialist()).run(scripted.task);
    expect(outcome.error?.code).toBe("CANCELLED");
    expect(outcome.reason?.chosen).toBe("id-scribe");
    expect(scripted.calls).toEqual([]);
  });
});
