/**
 * Records of the gorillas and troops the store keeps: the substrate of the scheduler and troop
 * plugins, part of the SDK through store-types.ts.
 */
import type { Usage } from "./types.js";

/** What a gorilla's operator asked for; the gorilla itself is a GORILLA.toml file, not a row. */
export type GorillaDesired = "caged" | "unleashed";

/** A gorilla's persisted state, kept by name so it survives restarts (and edits of its file). */
export interface GorillaState {
  name: string;
  desired: GorillaDesired;
  /** When `desired` last changed (ISO time). */
  changed_at: string;
  /** The last fire recorded with `recordFire`: where catch-up after a restart counts from. */
  last_fire_at?: string;
}

/** What started a run: the schedule, an operator (`run` now), or the catch-up after a restart. */
export type GorillaRunTrigger = "schedule" | "manual" | "catch_up";

/** `running` until it ends; `skipped` runs are recorded ended (a fire that ran no cycle). */
export type GorillaRunOutcome = "running" | "ok" | "failed" | "aborted" | "skipped";

/**
 * One gorilla cycle, or one fire that was skipped. Times are ISO 8601 in UTC with milliseconds
 * (the store normalizes the times it is given).
 */
export interface GorillaRunRecord {
  id: string;
  gorilla: string;
  trigger: GorillaRunTrigger;
  started_at: string;
  /** Absent while running. */
  finished_at?: string;
  outcome: GorillaRunOutcome;
  usage: Usage;
  /** The cycle's result, at most 256 KiB of UTF-8 (see `runs.finish`). */
  output?: string;
  /** Why it failed, was aborted or was skipped. */
  error?: string;
  /** The fighter bout the cycle ran in, given when the run finished. */
  bout_id?: string;
}

/** How the runs of a gorilla end (`runs.finish`). */
export interface GorillaRunEnd {
  outcome: "ok" | "failed" | "aborted";
  usage: Usage;
  output?: string;
  error?: string;
  /** Default: now. */
  finished_at?: string;
  /** The bout the cycle ran in (BOUT_NOT_FOUND when there is no such bout). */
  bout_id?: string;
}

/** A troop: fighters (by id) working under one strategy; the leader decomposes, synthesizes, breaks ties. */
export interface TroopRecord {
  id: string;
  name: string;
  leader: string;
  /** The ordered workers. */
  members: string[];
  /** The strategy's wire name (`pipeline`, `leader_worker`, …). */
  strategy: string;
  created_at: string;
}

export type TroopTaskStatus = "pending" | "running" | "completed" | "failed" | "cancelled";

/** A failure as recorded: the error's stable code and its message. */
export interface RecordedError {
  code: string;
  message: string;
}

/** One member's turn in a task: a fresh bout of that fighter with `input`. */
export interface TroopStep {
  fighter_id: string;
  /** What the step was for: `answer`, `vote`, `decompose`, `work`, `synthesize`, `tie_break`. */
  role: string;
  input: string;
  /** Null until it ends, and when it failed. */
  output: string | null;
  error: RecordedError | null;
  bout_id: string | null;
  started_at: string;
  finished_at: string | null;
  usage: Usage;
}

/** A consensus vote: the answer (0-based, into the `answer` steps) a member chose, or why it has none. */
export interface TroopVote {
  fighter_id: string;
  choice: number | null;
  reason?: string;
  error?: string;
  /** The leader's vote among tied answers. */
  tie_break?: boolean;
}

/** Why the specialist strategy chose its member: every member's score and the words that matched. */
export interface SpecialistReason {
  chosen: string;
  text: string;
  scores: { fighter_id: string; score: number; matched: string[] }[];
}

export interface TroopTaskRecord {
  id: string;
  troop_id: string;
  task: string;
  strategy: string;
  status: TroopTaskStatus;
  result: string | null;
  steps: TroopStep[];
  votes?: TroopVote[];
  reason?: SpecialistReason;
  error: RecordedError | null;
  /** True when some steps failed or never ran while others produced output (kept in `steps`). */
  partial: boolean;
  /** The steps' usage summed. */
  usage: Usage;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
}
