/**
 * The `consensus` troop strategy: every member answers the task; every member then votes for the
 * best of the answers (a structured vote, checked against VOTE_SCHEMA and asked once more when
 * invalid); the answer with the most votes wins and a tie goes to the leader's vote among the tied
 * answers. Every vote is kept on the task; a vote's `choice` is the 0-based index of the answer it
 * chose among the successful answers, in member order.
 */

import { mapBounded } from "../../lib/troops/bounded.js";
import { cancelled, everyStepFailed, noMembers, stepFailed } from "../../lib/troops/outcome.js";
import { tallyVotes } from "../../lib/troops/votes.js";
import {
  definePlugin,
  type StrategyTask,
  type TroopMember,
  type TroopStep,
  type TroopStrategy,
  type TroopVote,
} from "../../sdk/index.js";

/** A vote as the model gives it: the 1-based number of the answer it chose, and why. */
interface Ballot {
  choice: number;
  reason: string;
}

/** A vote's shape; `choice`'s maximum is the number of answers on the ballot (see voteSchema). */
const VOTE_SCHEMA = {
  type: "object",
  additionalProperties: false,
  required: ["choice", "reason"],
  properties: {
    choice: { type: "integer", minimum: 1 },
    reason: { type: "string", maxLength: 500 },
  },
} as const;

function voteSchema(answers: number): Record<string, unknown> {
  return {
    ...VOTE_SCHEMA,
    properties: { ...VOTE_SCHEMA.properties, choice: { ...VOTE_SCHEMA.properties.choice, maximum: answers } },
  };
}

/** The ballot: the task and the answers numbered from 1 (each number on its answer's first line), unsigned. */
function ballotPrompt(task: string, answers: string[], tieBreak: boolean): string {
  const intro = tieBreak
    ? `These answers to a task tied in your troop's vote; as its leader, choose the best one.`
    : `Your troop answered a task; vote for the best answer.`;
  return [
    `${intro}\n\nThe task:\n${task}`,
    ...answers.map((text, i) => `Answer ${i + 1}: ${text}`),
    `Answer with JSON only: {"choice": <the answer's number, 1 to ${answers.length}>, "reason": "<one short sentence>"}`,
  ].join("\n\n");
}

/** Why a structured vote has no value: the voter's turn failed, or its output twice missed the schema. */
function voteError(step: TroopStep): string {
  if (step.error && step.error.code !== "VALIDATION_FAILED") return `the vote failed: ${step.error.message}`;
  return `no valid vote in two attempts${step.error ? ` (${step.error.message})` : ""}`;
}

/** Asks `voter` for a vote over `answers` (indexes into the successful answers). */
async function castVote(
  task: StrategyTask,
  voter: TroopMember,
  ballot: { prompt: string; schema: Record<string, unknown>; answers: number[] },
  role: "vote" | "tie_break",
): Promise<TroopVote> {
  const { value, step } = await task.structured<Ballot>(voter.id, ballot.prompt, ballot.schema, role);
  const extra = role === "tie_break" ? { tie_break: true } : {};
  const choice = value ? ballot.answers[value.choice - 1] : undefined;
  if (!value || choice === undefined)
    return { fighter_id: voter.id, choice: null, error: voteError(step), ...extra };
  return { fighter_id: voter.id, choice, reason: value.reason, ...extra };
}

function ballotOver(task: string, texts: string[], answers: number[], tieBreak: boolean) {
  const shown = answers.map((i) => texts[i] ?? "");
  return { prompt: ballotPrompt(task, shown, tieBreak), schema: voteSchema(shown.length), answers };
}

/** The leader's vote among the tied answers; when it fails, the lowest-numbered tied answer, said so. */
async function breakTie(task: StrategyTask, texts: string[], tied: number[]): Promise<TroopVote> {
  const vote = await castVote(task, task.leader, ballotOver(task.task, texts, tied, true), "tie_break");
  if (vote.choice !== null) return vote;
  const fallback = tied[0] as number;
  return {
    ...vote,
    choice: fallback,
    error: `${vote.error}; answer ${fallback + 1}, the lowest-numbered tied answer, was chosen`,
  };
}

const consensus: TroopStrategy = {
  name: "consensus",
  async run(task: StrategyTask) {
    if (task.members.length === 0) return noMembers();
    const steps = await mapBounded(
      task.members,
      task.max_parallel,
      (member) => task.step(member.id, task.task, "answer"),
      task.signal,
    );
    if (task.signal.aborted) return cancelled(task.signal);
    const answered = steps.filter((step): step is TroopStep => step !== undefined && !stepFailed(step));
    if (answered.length === 0) {
      const failures = task.members.map((m, i) => ({ who: m.name, step: steps[i] as TroopStep }));
      return everyStepFailed("every member's answer", failures);
    }
    const texts = answered.map((step) => step.output ?? "");
    // One answer has no rival: it wins without a vote.
    if (texts.length === 1) return { result: texts[0] as string, votes: [] };

    const ballot = ballotOver(
      task.task,
      texts,
      texts.map((_, i) => i),
      false,
    );
    const cast = await mapBounded(
      task.members,
      task.max_parallel,
      (m) => castVote(task, m, ballot, "vote"),
      task.signal,
    );
    const votes = cast.filter((vote): vote is TroopVote => vote !== undefined);
    if (task.signal.aborted) return { ...cancelled(task.signal), votes };

    const { top } = tallyVotes(votes, texts.length);
    let winner = top[0] as number;
    if (top.length > 1) {
      const tieBreak = await breakTie(task, texts, top);
      votes.push(tieBreak);
      if (task.signal.aborted) return { ...cancelled(task.signal), votes };
      winner = tieBreak.choice as number;
    }
    return { result: texts[winner] as string, votes };
  },
};

export default definePlugin({
  id: "strategy-consensus",
  apply({ hooks }) {
    hooks.strategy.resolve.tap((name) => (name === "consensus" ? consensus : undefined));
  },
});
