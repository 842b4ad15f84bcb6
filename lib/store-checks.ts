/**
 * Checks of what a store is given, shared by the store plugins so that every store refuses the same
 * values with the same words: each failure is VALIDATION_FAILED. Also the shape of a troop task's
 * save (its plain columns and the JSON body of what the fighters produced), which each store then
 * writes its own way (sealed in PostgreSQL, in the encrypted file in SQLite).
 */
import {
  type RecordedError,
  SparError,
  type SpecialistReason,
  type TroopStep,
  type TroopTaskRecord,
  type TroopTaskStatus,
  type TroopVote,
} from "../sdk/index.js";

/** An ISO time as a store keeps it (UTC, milliseconds), so times compare as text. */
export function isoTime(value: string, field: string): string {
  const ms = typeof value === "string" ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(ms))
    throw new SparError("VALIDATION_FAILED", `${field} must be an ISO time, not ${String(value)}`);
  return new Date(ms).toISOString();
}

/** A safe integer of at least `least`. */
export function count(value: unknown, least: number, field: string): number {
  if (!Number.isSafeInteger(value) || (value as number) < least) {
    throw new SparError("VALIDATION_FAILED", `${field} must be an integer ≥ ${least}, not ${String(value)}`);
  }
  return value as number;
}

/**
 * The most task text a store keeps, in bytes of UTF-8. The API allows 100,000 characters (at most
 * 400,000 bytes), so this only stops a caller that skipped it.
 */
export const TASK_TEXT_LIMIT = 1024 * 1024;
/** The most a task's result, steps, votes and reason may take as JSON, in bytes of UTF-8. */
export const TASK_BODY_LIMIT = 16 * 1024 * 1024;

const STATUSES: ReadonlySet<string> = new Set(["pending", "running", "completed", "failed", "cancelled"]);

/** The JSON sealed in `body`: what the fighters produced. */
export interface TaskBody {
  result: string | null;
  steps: TroopStep[];
  votes?: TroopVote[];
  reason?: SpecialistReason;
}

/** The plain columns of a save, and the body as JSON. */
export interface TaskState {
  id: string;
  status: TroopTaskStatus;
  body: string;
  error_code: string | null;
  error_message: string | null;
  partial: boolean;
  input_tokens: number;
  output_tokens: number;
  started_at: string | null;
  finished_at: string | null;
}

/** The columns a save writes, from the record as it stands; VALIDATION_FAILED for what cannot be kept. */
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
  const body: TaskBody = {
    result: task.result,
    steps: task.steps,
    ...(task.votes !== undefined ? { votes: task.votes } : {}),
    ...(task.reason !== undefined ? { reason: task.reason } : {}),
  };
  return {
    id: text(task.id, "id"),
    status: task.status,
    body: bodyJson(body, task.id),
    error_code: error?.code ?? null,
    error_message: error?.message ?? null,
    partial: task.partial,
    input_tokens: count(task.usage?.input_tokens, 0, "usage.input_tokens"),
    output_tokens: count(task.usage?.output_tokens, 0, "usage.output_tokens"),
    started_at: task.started_at === null ? null : isoTime(task.started_at, "started_at"),
    finished_at: task.finished_at === null ? null : isoTime(task.finished_at, "finished_at"),
  };
}

/** The body as JSON, refused (not cut) past TASK_BODY_LIMIT: a cut would no longer parse. */
function bodyJson(body: TaskBody, id: string): string {
  let json: string;
  try {
    json = JSON.stringify(body);
  } catch (err) {
    throw invalid(`task ${id} cannot be stored as JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  const bytes = Buffer.byteLength(json, "utf8");
  if (bytes > TASK_BODY_LIMIT) {
    throw invalid(
      `task ${id}'s result, steps, votes and reason take ${bytes} bytes as JSON, more than the ${TASK_BODY_LIMIT} the store keeps`,
    );
  }
  return json;
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

export function invalid(message: string): SparError {
  return new SparError("VALIDATION_FAILED", message);
}
