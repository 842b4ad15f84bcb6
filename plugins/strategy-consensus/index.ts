/**
 * The `consensus` troop strategy: every member answers the task; every member then votes for the
 * best of the answers (a structured vote, checked against VOTE_SCHEMA and asked once more when
 * invalid); the answer with the most votes wins and a tie goes to the leader's vote among the tied
 * answers. Every vote is kept on the task; a vote's `choice` is the 0-based index of the answer it
 * chose among the successful answers, in member order.
 */

import { definePlugin, type StrategyTask, type TroopMember, type TroopStrategy } from "../../sdk/index.js";
import type { TroopStep, TroopVote } from "../../sdk/kits/troops.js";
import {
  cancelled,
  everyStepFailed,
  mapBounded,
  noMembers,
  stepFailed,
  tallyVotes,
} from "../../sdk/kits/troops.js";

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

/** A vote as cast, with the step it was cast in (its error's code says why a vote failed). */
interface Cast {
  vote: TroopVote;
  step: TroopStep;
  voter: TroopMember;
}

/** Asks `voter` for a vote over `answers` (indexes into the successful answers). */
async function castVote(
  task: StrategyTask,
  voter: TroopMember,
  ballot: { prompt: string; schema: Record<string, unknown>; answers: number[] },
  role: "vote" | "tie_break",
): Promise<Cast> {
  const { value, step } = await task.structured<Ballot>(voter.id, ballot.prompt, ballot.schema, role);
  const extra = role === "tie_break" ? { tie_break: true } : {};
  const choice = value ? ballot.answers[value.choice - 1] : undefined;
  if (!value || choice === undefined)
    return { vote: { fighter_id: voter.id, choice: null, error: voteError(step), ...extra }, step, voter };
  return { vote: { fighter_id: voter.id, choice, reason: value.reason, ...extra }, step, voter };
}

function ballotOver(task: string, texts: string[], answers: number[], tieBreak: boolean) {
  const shown = answers.map((i) => texts[i] ?? "");
  return { prompt: ballotPrompt(task, shown, tieBreak), schema: voteSchema(shown.length), answers };
}

/**
 * The leader's vote among the tied answers. When it fails after members' votes tied, the
 * lowest-numbered tied answer, said so; when no member's vote counted either, nobody chose and the
 * vote stays without a choice (the task fails).
 */
async function breakTie(
  task: StrategyTask,
  texts: string[],
  tied: number[],
  counted: boolean,
): Promise<Cast> {
  const cast = await castVote(task, task.leader, ballotOver(task.task, texts, tied, true), "tie_break");
  const { vote } = cast;
  if (vote.choice !== null || !counted) return cast;
  const fallback = tied[0] as number;
  return {
    ...cast,
    vote: {
      ...vote,
      choice: fallback,
      error: `${vote.error}; answer ${fallback + 1}, the lowest-numbered tied answer, was chosen`,
    },
  };
}

/** The outcome when no vote was valid: failed, with the first failed vote's code and every voter's reason. */
function noValidVote(casts: readonly Cast[]) {
  return everyStepFailed(
    "no answer was chosen: every vote, the leader's tie-break included,",
    casts.map(({ voter, step, vote }) => ({
      who: vote.tie_break ? `${voter.name} (tie-break)` : voter.name,
      step: step.error ? step : { ...step, error: { code: "VALIDATION_FAILED", message: voteError(step) } },
    })),
  );
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
    const casts = (
      await mapBounded(task.members, task.max_parallel, (m) => castVote(task, m, ballot, "vote"), task.signal)
    ).filter((cast): cast is Cast => cast !== undefined);
    const votes = casts.map((cast) => cast.vote);
    if (task.signal.aborted) return { ...cancelled(task.signal), votes };

    const { top } = tallyVotes(votes, texts.length);
    let winner = top[0] as number;
    if (top.length > 1) {
      const counted = votes.some((vote) => vote.choice !== null);
      const tieBreak = await breakTie(task, texts, top, counted);
      votes.push(tieBreak.vote);
      if (task.signal.aborted) return { ...cancelled(task.signal), votes };
      // Not one valid vote, the leader's included: no answer was chosen, so there is no result.
      if (tieBreak.vote.choice === null) return { ...noValidVote([...casts, tieBreak]), votes };
      winner = tieBreak.vote.choice;
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
