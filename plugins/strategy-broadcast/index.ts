/**
 * The `broadcast` troop strategy: every member answers the same task at once (at most `max_parallel`
 * at a time), then the leader writes one answer from theirs. Members that fail are left out of the
 * synthesis (the task is then partial); when none answers, there is nothing to synthesize.
 */

import { definePlugin, type StrategyTask, type TroopStrategy } from "../../sdk/index.js";
import type { TroopStep } from "../../sdk/kits/troops.js";
import {
  cancelled,
  everyStepFailed,
  failedStep,
  mapBounded,
  noMembers,
  stepError,
  stepFailed,
} from "../../sdk/kits/troops.js";

/** The leader's synthesis prompt: the task and every answer under its member's name. */
function synthesisPrompt(task: string, answers: { name: string; text: string }[], missing: string[]): string {
  const parts = [
    `Your troop's members each answered this task:\n${task}`,
    ...answers.map(({ name, text }) => `Answer from ${name}:\n${text}`),
  ];
  if (missing.length) parts.push(`No answer from: ${missing.join("; ")}.`);
  parts.push(
    "Write the one final answer to the task: keep what the answers agree on, settle where they differ, and add nothing they do not support. Reply with the answer only.",
  );
  return parts.join("\n\n");
}

const broadcast: TroopStrategy = {
  name: "broadcast",
  async run(task: StrategyTask) {
    if (task.members.length === 0) return noMembers();
    const steps = await mapBounded(
      task.members,
      task.max_parallel,
      (member) => task.step(member.id, task.task, "answer"),
      task.signal,
    );
    if (task.signal.aborted) return cancelled(task.signal);
    const answers: { name: string; text: string }[] = [];
    const failures: { who: string; step: TroopStep }[] = [];
    for (const [index, member] of task.members.entries()) {
      const step = steps[index] as TroopStep;
      if (stepFailed(step)) failures.push({ who: member.name, step });
      else answers.push({ name: member.name, text: step.output ?? "" });
    }
    if (answers.length === 0) return everyStepFailed("every member's answer", failures);
    const missing = failures.map(({ who, step }) => `${who} (${stepError(step)})`);
    const synthesis = await task.step(
      task.leader.id,
      synthesisPrompt(task.task, answers, missing),
      "synthesize",
    );
    if (task.signal.aborted) return cancelled(task.signal);
    if (stepFailed(synthesis))
      return failedStep(synthesis, `the synthesis by the leader (${task.leader.name})`);
    return { result: synthesis.output ?? "" };
  },
};

export default definePlugin({
  id: "strategy-broadcast",
  apply({ hooks }) {
    hooks.strategy.resolve.tap((name) => (name === "broadcast" ? broadcast : undefined));
  },
});
