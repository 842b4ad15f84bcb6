/**
 * The shapes every audit check shares, kept apart from security-audit.ts so checks can live in
 * files of their own (security-grants.ts, security-inventory.ts) without importing the registry.
 */

export type Severity = "high" | "medium" | "low";

export interface Finding {
  /** Stable: the check's name, plus `:<subject>` when a check can fail more than once. */
  id: string;
  severity: Severity;
  message: string;
  fix: string;
}

/** What one check says: findings, or that it passed (with a detail), or why it was skipped. */
export interface CheckResult {
  findings?: Finding[];
  passed?: string;
  skipped?: string;
}

export function fail(id: string, severity: Severity, message: string, fix: string): CheckResult {
  return { findings: [{ id, severity, message, fix }] };
}

/** Fixes are meant to be pasted: quote what the shell would split (fighter names may hold spaces). */
export function shellWord(text: string): string {
  return /^[\w./:@+-]+$/.test(text) ? text : `'${text.replace(/'/g, "'\\''")}'`;
}
