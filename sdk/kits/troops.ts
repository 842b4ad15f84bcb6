/**
 * `spar/sdk/troops`: what a troop strategy and the troop runtime share: the records of a troop and
 * its tasks (steps, votes, the specialist's reason), running steps in parallel within the troop's
 * limit, the endings every strategy words the same way (cancelled, a failed step, no members), a
 * consensus's tally and the specialist's deterministic choice. The six bundled strategies and
 * troops-local are built on these alone.
 *
 * @example
 * import { cancelled, mapBounded, stepFailed } from "spar/sdk/troops";
 * const steps = await mapBounded(task.members, task.max_parallel, (m) => task.step(m.id, task.task, "answer"), task.signal);
 * if (task.signal.aborted) return cancelled(task.signal);
 */
export { mapBounded } from "../../lib/troops/bounded.js";
export {
  cancelled,
  everyStepFailed,
  failedStep,
  failure,
  noMembers,
  stepError,
  stepFailed,
} from "../../lib/troops/outcome.js";
export type {
  RecordedError,
  SpecialistReason,
  TroopRecord,
  TroopStep,
  TroopTaskRecord,
  TroopTaskStatus,
  TroopVote,
} from "../../lib/troops/records.js";
export { type MemberScore, pickSpecialist, scoreMembers } from "../../lib/troops/specialist-score.js";
export { type Tally, tallyVotes } from "../../lib/troops/votes.js";
