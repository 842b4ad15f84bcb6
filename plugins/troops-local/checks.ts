/**
 * What troops-local checks before it writes a troop or a task (each failure VALIDATION_FAILED, with
 * the words the stores used when they kept troops): names and ids present, members a list, times
 * ISO, a task's state keepable, its text and what the fighters wrote within their limits.
 */

import { SparError } from "../../sdk/index.js";
import type { RecordedError, TroopTaskRecord, TroopTaskStatus } from "../../sdk/kits/troops.js";

/**
 * The most task text kept, in bytes of UTF-8. The API allows 100,000 characters (at most 400,000
 * bytes), so this only stops a caller that skipped it.
 */
export const TASK_TEXT_LIMIT = 1024 * 1024;
/** The most a task's result, steps, votes and reason may take as JSON, in bytes of UTF-8. */
export const TASK_BODY_LIMIT = 16 * 1024 * 1024;

const STATUSES: ReadonlySet<string> = new Set(["pending", "running", "completed", "failed", "cancelled"]);

/** What a save writes: the task's state, everything but its id, troop, text, strategy and creation. */
export interface TaskState {
  status: TroopTaskStatus;
  result: string | null;
  steps: TroopTaskRecord["steps"];
  votes?: TroopTaskRecord["votes"];
  reason?: TroopTaskRecord["reason"];
  error: RecordedError | null;
  partial: boolean;
  usage: { input_tokens: number; output_tokens: number };
  started_at: string | null;
  finished_at: string | null;
}

/** The state a save writes, from the record as it stands; VALIDATION_FAILED for what cannot be kept. */
export function taskState(task: TroopTaskRecord): TaskState {
  if (!Array.isArray(task.steps)) throw invalid("steps must be an array");
  if (task.votes !== undefined && !Array.isArray(task.votes)) throw invalid("votes must be an array");
  if (task.reason !== undefined && (typeof task.reason !== "object" || task.reason === null)) {
    throw invalid("reason must be an object");
  }
  if (task.result !== null && typeof task.result !== "string")
    throw invalid("result must be a string or null");
  if (typeof task.partial !== "boolean") throw invalid("partial must be true or false");
  if (!STATUSES.has(task.status)) {
    throw invalid(`status must be one of ${[...STATUSES].join(", ")}, not ${String(task.status)}`);
  }
  const error = recordedError(task.error, "error");
  // Through JSON and back: what is stored is exactly what reads back.
  const body = bodyOf(task);
  return {
    status: task.status,
    result: body.result,
    steps: body.steps,
    ...(body.votes !== undefined ? { votes: body.votes } : {}),
    ...(body.reason !== undefined ? { reason: body.reason } : {}),
    error,
    partial: task.partial,
    usage: {
      input_tokens: count(task.usage?.input_tokens, 0, "usage.input_tokens"),
      output_tokens: count(task.usage?.output_tokens, 0, "usage.output_tokens"),
    },
    started_at: task.started_at === null ? null : isoTime(task.started_at, "started_at"),
    finished_at: task.finished_at === null ? null : isoTime(task.finished_at, "finished_at"),
  };
}

/** What the fighters produced, as JSON would keep it; refused (not cut) past TASK_BODY_LIMIT. */
function bodyOf(task: TroopTaskRecord): Pick<TaskState, "result" | "steps" | "votes" | "reason"> {
  const body = {
    result: task.result,
    steps: task.steps,
    ...(task.votes !== undefined ? { votes: task.votes } : {}),
    ...(task.reason !== undefined ? { reason: task.reason } : {}),
  };
  let json: string;
  try {
    json = JSON.stringify(body);
  } catch (err) {
    throw invalid(
      `task ${task.id} cannot be stored as JSON: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  const bytes = Buffer.byteLength(json, "utf8");
  if (bytes > TASK_BODY_LIMIT) {
    throw invalid(
      `task ${task.id}'s result, steps, votes and reason take ${bytes} bytes as JSON, more than the ${TASK_BODY_LIMIT} the store keeps`,
    );
  }
  return JSON.parse(json) as typeof body;
}

export function taskText(value: string): string {
  const task = text(value, "task");
  const bytes = Buffer.byteLength(task, "utf8");
  if (bytes > TASK_TEXT_LIMIT) {
    throw invalid(`task is ${bytes} bytes of UTF-8, more than the ${TASK_TEXT_LIMIT} the store keeps`);
  }
  return task;
}

export function members(value: string[]): string[] {
  if (!Array.isArray(value)) throw invalid("members must be an array of fighter ids");
  return value.map((member, i) => text(member, `members[${i}]`));
}

export function recordedError(value: RecordedError | null, field: string): RecordedError | null {
  if (value === null) return null;
  if (typeof value !== "object" || typeof value.code !== "string" || typeof value.message !== "string") {
    throw invalid(`${field} must be null or { code, message } with both strings`);
  }
  return { code: value.code, message: value.message };
}

export function text(value: string, field: string): string {
  if (typeof value !== "string" || value === "") throw invalid(`${field} must be a non-empty string`);
  return value;
}

/** An ISO time as kept (UTC, milliseconds), so times compare as text. */
export function isoTime(value: string, field: string): string {
  const ms = typeof value === "string" ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(ms)) throw invalid(`${field} must be an ISO time, not ${String(value)}`);
  return new Date(ms).toISOString();
}

/** A safe integer of at least `least`. */
export function count(value: unknown, least: number, field: string): number {
  if (!Number.isSafeInteger(value) || (value as number) < least) {
    throw invalid(`${field} must be an integer ≥ ${least}, not ${String(value)}`);
  }
  return value as number;
}

export function invalid(message: string): SparError {
  return new SparError("VALIDATION_FAILED", message);
}
