/** Checks of values the store is given, shared by its groups: each failure is VALIDATION_FAILED. */
import { SparError } from "../../kernel/sdk.js";

/** An ISO time as the store keeps it (UTC, milliseconds), so times compare as text. */
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
 * ISO timestamps that strictly increase within a store, so "latest" and "newest first" never depend
 * on two writes landing in the same millisecond.
 */
export function createClock(): () => string {
  let last = 0;
  return () => {
    last = Math.max(Date.now(), last + 1);
    return new Date(last).toISOString();
  };
}
