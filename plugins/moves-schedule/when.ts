/** When a schedule runs: a time given outright, a delay, or a cron expression in a time zone. */
import { Cron } from "croner";
import { SparError } from "../../sdk/index.js";

/** The latest time a one-time schedule may name: ten years on. */
const MAX_AHEAD_MS = 10 * 365 * 86_400_000;
const SHORTCUTS = new Set(["@yearly", "@annually", "@monthly", "@weekly", "@daily", "@hourly"]);

export interface When {
  next: Date;
  cron?: string;
  timezone?: string;
}

/** Reads `at`, `in_minutes` or `cron` (exactly one) as the first run, refusing what cannot run. */
export function firstRun(
  input: { at?: unknown; in_minutes?: unknown; cron?: unknown; timezone?: unknown },
  now: Date,
): When {
  const given = (["at", "in_minutes", "cron"] as const).filter((k) => input[k] !== undefined);
  if (given.length !== 1) {
    throw new SparError(
      "VALIDATION_FAILED",
      `give exactly one of at, in_minutes or cron (got ${given.length === 0 ? "none" : given.join(", ")})`,
    );
  }
  if (input.timezone !== undefined && input.cron === undefined) {
    throw new SparError(
      "VALIDATION_FAILED",
      "timezone goes with cron; give `at` with its own offset instead",
    );
  }
  if (typeof input.cron === "string") {
    const timezone = typeof input.timezone === "string" ? input.timezone : undefined;
    return {
      next: nextCronRun(input.cron, timezone, now),
      cron: input.cron,
      ...(timezone ? { timezone } : {}),
    };
  }
  const next =
    typeof input.in_minutes === "number"
      ? new Date(now.getTime() + input.in_minutes * 60_000)
      : parseTime(String(input.at));
  if (next.getTime() <= now.getTime()) {
    throw new SparError(
      "VALIDATION_FAILED",
      `${next.toISOString()} has passed; it is ${now.toISOString()} now`,
    );
  }
  if (next.getTime() - now.getTime() > MAX_AHEAD_MS) {
    throw new SparError("VALIDATION_FAILED", "a schedule may be at most ten years ahead");
  }
  return { next };
}

/** The first run of `cron` after `after`, in `timezone` (UTC by default). */
export function nextCronRun(cron: string, timezone: string | undefined, after: Date): Date {
  const expression = cron.trim();
  if (!SHORTCUTS.has(expression) && expression.split(/\s+/).length !== 5) {
    throw new SparError(
      "VALIDATION_FAILED",
      `cron "${cron}" needs five fields (minute hour day-of-month month day-of-week), e.g. "0 9 * * 1-5", or @hourly, @daily, @weekly, @monthly`,
    );
  }
  if (timezone !== undefined) checkTimezone(timezone);
  let job: Cron;
  try {
    job = new Cron(expression, { paused: true, timezone: timezone ?? "UTC" });
  } catch (err) {
    throw new SparError("VALIDATION_FAILED", `cron "${cron}" is not valid: ${(err as Error).message}`);
  }
  const next = job.nextRun(after);
  job.stop();
  if (!next) throw new SparError("VALIDATION_FAILED", `cron "${cron}" never runs again`);
  return next;
}

function parseTime(text: string): Date {
  // An offset (Z or ±hh:mm) is required: a bare local time would depend on the daemon's time zone.
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(text)) {
    throw new SparError(
      "VALIDATION_FAILED",
      `at "${text}" must be an ISO 8601 time with its offset, e.g. 2026-03-01T09:00:00Z or 2026-03-01T10:00:00+01:00`,
    );
  }
  // Date would roll 30 February over into March: check the calendar first.
  const [year, month, day, hour, minute, second] = text.split(/[-T:.Z+]/).map(Number);
  const daysInMonth = new Date(Date.UTC(year ?? 0, month ?? 0, 0)).getUTCDate();
  const time = new Date(text);
  const real =
    !Number.isNaN(time.getTime()) &&
    (month ?? 0) >= 1 &&
    (month ?? 0) <= 12 &&
    (day ?? 0) >= 1 &&
    (day ?? 0) <= daysInMonth &&
    (hour ?? 0) <= 23 &&
    (minute ?? 0) <= 59 &&
    (second ?? 0) <= 59;
  if (!real) throw new SparError("VALIDATION_FAILED", `at "${text}" is not a real time`);
  return time;
}

function checkTimezone(timezone: string): void {
  try {
    new Intl.DateTimeFormat("en", { timeZone: timezone });
  } catch {
    throw new SparError(
      "VALIDATION_FAILED",
      `timezone "${timezone}" is not an IANA time zone, e.g. Europe/Paris`,
    );
  }
}
