/**
 * The `pipeline` troop strategy: the members work in the troop's order, the first on the task and
 * each next one on the previous one's output (framed with the task, so every member knows the goal).
 * A failed step stops the pipeline; the last member's output is the result.
 */

import { definePlugin, type StrategyTask, type TroopMember, type TroopStrategy } from "../../sdk/index.js";
import { cancelled, failedStep, noMembers, stepFailed } from "../../sdk/kits/troops.js";

/** What member `index` (0-based, after the first) of `count` is given: the task and the output before it. */
function handOff(task: string, previous: TroopMember, output: string, index: number, count: number): string {
  const last = index === count - 1 ? " Your output is the pipeline's final result." : "";
  return [
    `You are step ${index + 1} of ${count} in a pipeline working on this task:\n${task}`,
    `The output of step ${index} (${previous.name}), which is your input:\n${output}`,
    `Carry the work forward.${last}`,
  ].join("\n\n");
}

const pipeline: TroopStrategy = {
  name: "pipeline",
  async run(task: StrategyTask) {
    const { members } = task;
    if (members.length === 0) return noMembers();
    let output = task.task;
    for (const [index, member] of members.entries()) {
      if (task.signal.aborted) return cancelled(task.signal);
      const previous = members[index - 1];
      const input = previous ? handOff(task.task, previous, output, index, members.length) : task.task;
      const step = await task.step(member.id, input, "work");
      if (task.signal.aborted) return cancelled(task.signal);
      if (stepFailed(step))
        return failedStep(step, `${member.name} (step ${index + 1} of ${members.length})`);
      output = step.output ?? "";
    }
    return { result: output };
  },
};

export default definePlugin({
  id: "strategy-pipeline",
  apply({ hooks }) {
    hooks.strategy.resolve.tap((name) => (name === "pipeline" ? pipeline : undefined));
  },
});
