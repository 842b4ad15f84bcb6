/**
 * A budget's periods: the calendar day and month in the budget time zone (`[budgets] time_zone`,
 * the machine's by default), each from its first instant to the next one's, DST included (a day
 * may last 23 or 25 hours, and begin at 01:00 where midnight is skipped). The first instant of a
 * local date is searched minute by minute (offsets are whole minutes), over the 30 hours around it.
 */
import { SparError } from "../../sdk/index.js";

export type PeriodKind = "daily" | "monthly";

export interface Period {
  kind: PeriodKind;
  /** `2025-03-30` for a day, `2025-03` for a month: part of the counter's key. */
  key: string;
  starts_at: number;
  resets_at: number;
}

const MINUTE = 60_000;
const formatters = new Map<string, Intl.DateTimeFormat>();

/** The machine's time zone: the default `[budgets] time_zone`. */
export function machineTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}

/** The time zone, checked: CONFIG_INVALID naming `[budgets] time_zone` when the runtime does not know it. */
export function checkTimeZone(timeZone: string): string {
  try {
    formatterOf(timeZone);
  } catch {
    throw new SparError(
      "CONFIG_INVALID",
      `config.toml: "budgets.time_zone" is not a time zone: ${timeZone}`,
      {
        path: "budgets.time_zone",
      },
    );
  }
  return timeZone;
}

function formatterOf(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat("en-CA", {
      timeZone,
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
    });
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

/** The local date of an instant, `YYYY-MM-DD` (en-CA formats dates so). */
export function localDate(at: number, timeZone: string): string {
  return formatterOf(timeZone).format(at);
}

const pad = (n: number, width = 2) => String(n).padStart(width, "0");
const dateOf = (y: number, m: number, d: number) => {
  const date = new Date(Date.UTC(y, m - 1, d));
  return `${pad(date.getUTCFullYear(), 4)}-${pad(date.getUTCMonth() + 1)}-${pad(date.getUTCDate())}`;
};

/** The first instant whose local date is `date` or later. */
function firstInstant(date: string, timeZone: string): number {
  const [y, m, d] = date.split("-").map(Number) as [number, number, number];
  const noonUtc = Date.UTC(y, m - 1, d, 12);
  let lo = Math.floor((noonUtc - 27 * 3_600_000) / MINUTE);
  let hi = Math.floor((noonUtc + 3 * 3_600_000) / MINUTE);
  // Invariant: localDate(hi) >= date (UTC+14 at the latest); find the least such minute.
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    if (localDate(mid * MINUTE, timeZone) >= date) hi = mid;
    else lo = mid + 1;
  }
  return hi * MINUTE;
}

/** The period of `kind` that holds the instant `at`. */
export function periodOf(kind: PeriodKind, at: number, timeZone: string): Period {
  const today = localDate(at, timeZone);
  const [y, m, d] = today.split("-").map(Number) as [number, number, number];
  if (kind === "daily") {
    return {
      kind,
      key: today,
      starts_at: firstInstant(today, timeZone),
      resets_at: firstInstant(dateOf(y, m, d + 1), timeZone),
    };
  }
  return {
    kind,
    key: today.slice(0, 7),
    starts_at: firstInstant(dateOf(y, m, 1), timeZone),
    resets_at: firstInstant(dateOf(y, m + 1, 1), timeZone),
  };
}
