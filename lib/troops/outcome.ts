/**
 * The endings every troop strategy shares: a cancelled task, a failed step, a troop with nobody in
 * it. One wording and one choice of error code for all six strategies, so a task record reads the
 * same whichever strategy ran it.
 */

import { type ErrorCode, isSparError, type StrategyOutcome } from "../../sdk/index.js";
import type { TroopStep } from "./records.js";

/** A failed outcome with a catalog code. */
export function failure(code: ErrorCode, message: string): StrategyOutcome {
  return { error: { code, message } };
}

/** The outcome of a task whose signal was aborted: CANCELLED, with the canceller's words when it gave some. */
export function cancelled(signal: AbortSignal): StrategyOutcome {
  const reason: unknown = signal.reason;
  return failure("CANCELLED", isSparError(reason, "CANCELLED") ? reason.message : "the task was cancelled");
}

/** The outcome for a troop without members (the runtime refuses to create one; this keeps `% n` safe). */
export function noMembers(): StrategyOutcome {
  return failure("VALIDATION_FAILED", "the troop has no members");
}

/**
 * True when a step failed: it has an `error` (a structured step whose output missed its schema keeps
 * that output beside the error) or no output.
 */
export function stepFailed(step: TroopStep): boolean {
  return step.error !== null || step.output === null;
}

/** Why a step failed, in words. */
export function stepError(step: TroopStep): string {
  return step.error?.message ?? "it returned no output";
}

/**
 * The outcome for a task that ends because a step failed: the step's own code (the fighter's turn
 * failed for that reason) and `who` named in the message.
 *
 * @example
 * return failedStep(step, `writer (step 2 of 3)`); // "writer (step 2 of 3) failed: …"
 */
export function failedStep(step: TroopStep, who: string): StrategyOutcome {
  return { error: { code: step.error?.code ?? "INTERNAL", message: `${who} failed: ${stepError(step)}` } };
}

/**
 * The outcome for a task whose every step of one kind failed: the first failure's code, and each
 * failure named in the message.
 */
export function everyStepFailed(
  what: string,
  failures: readonly { who: string; step: TroopStep }[],
): StrategyOutcome {
  const list = failures.map(({ who, step }) => `${who}: ${stepError(step)}`).join("; ");
  return {
    error: { code: failures[0]?.step.error?.code ?? "INTERNAL", message: `${what} failed (${list})` },
  };
}
