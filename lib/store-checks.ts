/**
 * Checks of what a store is given, shared by the store plugins so that every store refuses the same
 * values with the same words: each failure is VALIDATION_FAILED.
 */
import { SparError } from "../sdk/index.js";

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
