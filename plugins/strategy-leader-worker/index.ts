/**
 * The `leader_worker` troop strategy: the leader splits the task into 1 to 8 subtasks (structured
 * JSON checked against DECOMPOSITION_SCHEMA, asked once more when invalid), subtask i goes to member
 * i mod n, the subtasks run in parallel (at most `max_parallel` at once), and the leader writes the
 * result from the subtasks' results, told which ones failed.
 */

import { definePlugin, type StrategyTask, type TroopMember, type TroopStrategy } from "../../sdk/index.js";
import type { TroopStep } from "../../sdk/kits/troops.js";
import {
  cancelled,
  everyStepFailed,
  failedStep,
  failure,
  mapBounded,
  noMembers,
  stepError,
  stepFailed,
} from "../../sdk/kits/troops.js";

/** The most subtasks a decomposition may have. */
const MAX_SUBTASKS = 8;

/** A decomposition's shape: 1 to 8 subtasks, each a task of at most 4,000 characters. */
const DECOMPOSITION_SCHEMA = {
  type: "object",
  additionalProperties: false,
  required: ["subtasks"],
  properties: {
    subtasks: {
      type: "array",
      minItems: 1,
      maxItems: MAX_SUBTASKS,
      items: {
        type: "object",
        additionalProperties: false,
        required: ["task"],
        properties: { task: { type: "string", minLength: 1, maxLength: 4000 } },
      },
    },
  },
};

interface Decomposition {
  subtasks: { task: string }[];
}

/** The leader's decomposition prompt: the task, the workers in the order subtasks go to them, the format. */
function decomposePrompt(task: string, members: readonly TroopMember[]): string {
  const workers = members.map((m, i) => `${i + 1}. ${m.name}${m.description ? ` — ${m.description}` : ""}`);
  return [
    `You lead a troop. Split this task into 1 to ${MAX_SUBTASKS} subtasks that can be worked on at the same time:\n${task}`,
    `Your workers, in the order subtasks are handed out (subtask 1 to the first, and so on, starting again at the first when there are more subtasks than workers):\n${workers.join("\n")}`,
    `Answer with JSON only: {"subtasks": [{"task": "<a self-contained subtask>"}]}`,
  ].join("\n\n");
}

/** A worker's prompt: the whole task for context, and its own part. */
function workPrompt(task: string, subtask: string): string {
  return `You are doing one part of a larger task.\n\nThe whole task:\n${task}\n\nYour part:\n${subtask}\n\nReply with the result of your part only.`;
}

interface Part {
  subtask: string;
  member: TroopMember;
}

/** The leader's synthesis prompt: the task and each subtask with its result, or that it failed. */
function synthesisPrompt(task: string, parts: Part[], steps: TroopStep[]): string {
  const results = parts.map(({ subtask, member }, i) => {
    const step = steps[i] as TroopStep;
    const head = `Subtask ${i + 1} (${member.name}): ${subtask}`;
    return stepFailed(step) ? `${head}\nFAILED: ${stepError(step)}` : `${head}\nResult:\n${step.output}`;
  });
  return [
    `Your workers have done the subtasks of this task:\n${task}`,
    ...results,
    "Write the final answer to the task from these results. Where a subtask failed, say what is missing. Reply with the answer only.",
  ].join("\n\n");
}

/** Why there is no decomposition: the leader's turn failed, or its output never fit the schema. */
function noDecomposition(step: TroopStep) {
  if (step.error && step.error.code !== "VALIDATION_FAILED") {
    return failedStep(step, "the leader's decomposition");
  }
  const detail = step.error ? `: ${step.error.message}` : "";
  return failure("VALIDATION_FAILED", `the leader returned an invalid decomposition twice${detail}`);
}

const leaderWorker: TroopStrategy = {
  name: "leader_worker",
  async run(task: StrategyTask) {
    const { members } = task;
    if (members.length === 0) return noMembers();
    if (task.signal.aborted) return cancelled(task.signal);
    const { value, step } = await task.structured<Decomposition>(
      task.leader.id,
      decomposePrompt(task.task, members),
      DECOMPOSITION_SCHEMA,
      "decompose",
    );
    if (task.signal.aborted) return cancelled(task.signal);
    if (!value) return noDecomposition(step);

    const parts: Part[] = value.subtasks.map(({ task: subtask }, i) => ({
      subtask,
      member: members[i % members.length] as TroopMember,
    }));
    const ran = await mapBounded(
      parts,
      task.max_parallel,
      (part) => task.step(part.member.id, workPrompt(task.task, part.subtask), "work"),
      task.signal,
    );
    if (task.signal.aborted) return cancelled(task.signal);
    const steps = ran as TroopStep[];
    if (steps.every(stepFailed)) {
      return everyStepFailed(
        "every subtask",
        parts.map((part, i) => ({
          who: `subtask ${i + 1} (${part.member.name})`,
          step: steps[i] as TroopStep,
        })),
      );
    }

    const synthesis = await task.step(task.leader.id, synthesisPrompt(task.task, parts, steps), "synthesize");
    if (task.signal.aborted) return cancelled(task.signal);
    if (stepFailed(synthesis))
      return failedStep(synthesis, `the synthesis by the leader (${task.leader.name})`);
    return { result: synthesis.output ?? "" };
  },
};

export default definePlugin({
  id: "strategy-leader-worker",
  apply({ hooks }) {
    hooks.strategy.resolve.tap((name) => (name === "leader_worker" ? leaderWorker : undefined));
  },
});
