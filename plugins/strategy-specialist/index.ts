/**
 * The `specialist` troop strategy: the task goes to the one member that best matches it, by a
 * deterministic score of the task's words against each member's capabilities, skills and
 * description (lib/troops/specialist-score.ts). Every member's score and a sentence saying why are
 * kept on the task as its `reason`, whatever the outcome.
 */

import { definePlugin, type StrategyTask, type TroopStrategy } from "../../sdk/index.js";
import { cancelled, failedStep, noMembers, pickSpecialist, stepFailed } from "../../sdk/kits/troops.js";

const specialist: TroopStrategy = {
  name: "specialist",
  async run(task: StrategyTask) {
    if (task.members.length === 0) return noMembers();
    const { member, reason } = pickSpecialist(task.task, task.members);
    if (task.signal.aborted) return { ...cancelled(task.signal), reason };
    const step = await task.step(member.id, task.task, "answer");
    if (task.signal.aborted) return { ...cancelled(task.signal), reason };
    if (stepFailed(step)) return { ...failedStep(step, `${member.name} (the chosen specialist)`), reason };
    return { result: step.output ?? "", reason };
  },
};

export default definePlugin({
  id: "strategy-specialist",
  apply({ hooks }) {
    hooks.strategy.resolve.tap((name) => (name === "specialist" ? specialist : undefined));
  },
});
