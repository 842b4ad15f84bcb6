/**
 * Records of the gorillas the store keeps: the substrate of the scheduler plugins, part of the SDK
 * through store-types.ts.
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
