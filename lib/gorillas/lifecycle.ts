/**
 * The gorilla lifecycle's decisions, kept apart from timers and the store so they can be tested as
 * plain functions: what state a gorilla shows, what a fire does, what a restart does about fires
 * missed while the daemon was down, and what a cycle's end is recorded as.
 */
import type { GorillaDesired, GorillaState } from "./records.js";

/** What a gorilla shows: RAMPAGING while a cycle runs (a manual one too), else what was asked for. */
export type GorillaStatus = "CAGED" | "UNLEASHED" | "RAMPAGING";

export function statusOf(desired: GorillaDesired, running: boolean): GorillaStatus {
  if (running) return "RAMPAGING";
  return desired === "unleashed" ? "UNLEASHED" : "CAGED";
}

/**
 * A fire of the schedule: it starts a cycle, or, while one still runs (the only overlap policy,
 * `skip`), it is recorded `skipped`. Exactly one cycle per fire, never two at once.
 */
export function onFire(
  running: { run_id?: string } | undefined,
): { run: true } | { run: false; reason: string } {
  if (!running) return { run: true };
  const which = running.run_id ? ` (run ${running.run_id})` : "";
  return { run: false, reason: `the previous cycle${which} was still running` };
}

/**
 * The first fire that came due after the gorilla last fired (or, never having fired, after it was
 * unleashed) and before `now`: a fire missed while the daemon was down. Undefined when none was.
 */
export function missedFire(
  next: (after: Date) => Date | null,
  state: Pick<GorillaState, "last_fire_at" | "changed_at">,
  now: Date,
): Date | undefined {
  const since = new Date(state.last_fire_at ?? state.changed_at);
  if (Number.isNaN(since.getTime())) return undefined;
  const due = next(since);
  return due && due.getTime() <= now.getTime() ? due : undefined;
}

/**
 * What a start does for an unleashed gorilla: `catch_up = "skip"` lets missed fires go (the schedule
 * resumes at its next time), `"once"` runs one cycle now however many were missed.
 */
export function catchUp(policy: "skip" | "once", missed: Date | undefined): boolean {
  return policy === "once" && missed !== undefined;
}

/** Why a cycle was stopped before its end, when something stopped it. */
export interface Stop {
  outcome: "failed" | "aborted";
  reason: string;
}

/**
 * How a cycle ended, from how the turn ended: its own stop (caged, timed out, over budget) first;
 * then a reply that ran out of iterations or looped, or a call that needed an approval no one could
 * give (failed: the task was not finished); a turn cancelled by someone else (the daemon stopping)
 * is aborted; any other error failed.
 */
export function cycleOutcome(
  stop: Stop | undefined,
  turn:
    | { ok: true; stop_reason: "end" | "max_iterations" | "loop_guard"; iterations: number }
    | { ok: false; code?: string; message: string },
  needsApproval?: string,
): { outcome: "ok" | "failed" | "aborted"; error?: string } {
  if (stop) return { outcome: stop.outcome, error: stop.reason };
  if (turn.ok && needsApproval) return { outcome: "failed", error: needsApproval };
  if (turn.ok) {
    if (turn.stop_reason === "max_iterations") {
      return {
        outcome: "failed",
        error: `hit its max_iterations budget: ${turn.iterations} model calls without a final answer`,
      };
    }
    if (turn.stop_reason === "loop_guard") {
      return { outcome: "failed", error: "stopped by the loop guard: the model repeated the same tool call" };
    }
    return { outcome: "ok" };
  }
  const code = turn.code ? ` (${turn.code})` : "";
  return { outcome: turn.code === "CANCELLED" ? "aborted" : "failed", error: `${turn.message}${code}` };
}

/**
 * The message that starts a cycle: who and when (the bundled prompts take today's date from it),
 * then the gorilla's task.
 */
export function cycleMessage(
  gorilla: { name: string; task: string },
  run: { id: string; trigger: string },
  at: Date,
  timezone: string,
): string {
  const local = new Intl.DateTimeFormat("en-GB", {
    timeZone: timezone,
    weekday: "long",
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
    hourCycle: "h23",
  }).formatToParts(at);
  const part = (type: string) => local.find((p) => p.type === type)?.value ?? "";
  const when = `${part("weekday")} ${part("year")}-${part("month")}-${part("day")} ${part("hour")}:${part("minute")}:${part("second")}`;
  return (
    `[gorilla ${gorilla.name}: cycle ${run.id}, trigger ${run.trigger}]\n` +
    `Current date and time: ${when} (${timezone}); ${at.toISOString()} in UTC.\n\n${gorilla.task}`
  );
}
