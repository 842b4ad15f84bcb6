import { describe, expect, it } from "vitest";
import { checkedManifest, member, resolveStrategy, scriptedTask } from "../../test/helpers/scripted-task.js";
import plugin from "./index.js";

const members = [member("ann"), member("bob"), member("cid")];

async function roundRobin() {
  const strategy = await resolveStrategy(plugin, "round_robin");
  if (!strategy) throw new Error("strategy-round-robin did not resolve round_robin");
  return strategy;
}

describe("strategy-round-robin", () => {
  it("contributes and resolves `round_robin` only", async () => {
    expect(checkedManifest(import.meta.dirname).contributes?.strategies).toEqual(["round_robin"]);
    expect((await roundRobin()).name).toBe("round_robin");
    expect(await resolveStrategy(plugin, "leader_worker")).toBeUndefined();
  });

  it("gives successive tasks to successive members, carrying on from the stored rotation", async () => {
    const scripted = scriptedTask({ members, rotation: 4, reply: ({ fighterId }) => `from ${fighterId}` });
    const strategy = await roundRobin();
    const results = [];
    for (let i = 0; i < 4; i++) results.push((await strategy.run(scripted.task)).result);
    expect(results).toEqual(["from id-bob", "from id-cid", "from id-ann", "from id-bob"]);
    expect(scripted.calls.every((c) => c.role === "answer" && c.input === scripted.task.task)).toBe(true);
  });

  it("fails when the member's step fails, naming it", async () => {
    const scripted = scriptedTask({ members, reply: () => ({ code: "PROVIDER_ERROR", message: "down" }) });
    expect(await (await roundRobin()).run(scripted.task)).toEqual({
      error: { code: "PROVIDER_ERROR", message: "ann (turn 1) failed: down" },
    });
  });

  it("takes no turn and starts no step for a cancelled task", async () => {
    const scripted = scriptedTask({ members, reply: () => "never" });
    scripted.abort();
    expect((await (await roundRobin()).run(scripted.task)).error?.code).toBe("CANCELLED");
    expect(scripted.calls).toEqual([]);
    expect(await scripted.task.rotate()).toBe(0);
  });
});
