/**
 * The `round_robin` troop strategy: each task goes to the next member in turn. The turn comes from
 * the troop's rotation counter (`task.rotate()`, kept in the store), so it carries on across restarts.
 */

import { definePlugin, type StrategyTask, type TroopMember, type TroopStrategy } from "../../sdk/index.js";
import { cancelled, failedStep, noMembers, stepFailed } from "../../sdk/kits/troops.js";

const roundRobin: TroopStrategy = {
  name: "round_robin",
  async run(task: StrategyTask) {
    const { members } = task;
    if (members.length === 0) return noMembers();
    // A cancelled task does not take a turn from the rotation.
    if (task.signal.aborted) return cancelled(task.signal);
    const turn = await task.rotate();
    const member = members[turn % members.length] as TroopMember;
    if (task.signal.aborted) return cancelled(task.signal);
    const step = await task.step(member.id, task.task, "answer");
    if (task.signal.aborted) return cancelled(task.signal);
    if (stepFailed(step)) return failedStep(step, `${member.name} (turn ${turn + 1})`);
    return { result: step.output ?? "" };
  },
};

export default definePlugin({
  id: "strategy-round-robin",
  apply({ hooks }) {
    hooks.strategy.resolve.tap((name) => (name === "round_robin" ? roundRobin : undefined));
  },
});
