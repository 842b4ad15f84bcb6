/**
 * When a gorilla fires (DESIGN §11): a cron expression, or a friendly form, read in one time zone.
 *
 * Every form names wall-clock times in that zone, never "so long after the last run": the next fire is
 * a pure function of the clock, so it is the same before and after a restart, `next_run_at` is stable
 * wherever it is shown, and a missed fire is simply a fire time that passed while the daemon was down.
 *
 * | Form | Kind | Fires at (local time in the schedule's zone) |
 * |---|---|---|
 * | cron, 5 fields (`0 *\/6 * * *`) or 6 with seconds first, or `@hourly` … `@yearly` | cron | what croner says |
 * | `hourly` / `daily` / `weekly` | cron | as `@hourly` / `@daily` / `@weekly`: minute 0 of every hour, 00:00, Sunday 00:00 |
 * | `every <n>s`, n dividing 60 | interval | second 0, n, 2n … of every minute (`*\/n * * * * *`) |
 * | `every <n>m`, n dividing 60 | interval | minute 0, n, 2n … of every hour (`*\/n * * * *`) |
 * | `every <n>h`, n dividing 24 | interval | 00:00, n:00, 2n:00 … of every day (`0 *\/n * * *`) |
 * | `every 1d` | interval | 00:00 every day (`0 0 * * *`) |
 * | `every <n>d`, 2 ≤ n ≤ 366 | interval | 00:00 on every n-th calendar day, counted from 1970-01-01 |
 *
 * `every 60s`, `every 60m` and `every 24h` are the next unit's `every 1`. Units may be spelt out
 * (`every 30 minutes`, `every 2 days`). An n that does not divide its unit (`every 7m`) is refused:
 * its runs could not be evenly spaced on the clock; a cron expression says exactly what is meant.
 * Across a DST change the clock decides: `every 6h` fires at 00:00 and 06:00 local time, 5 or 7
 * real hours apart that day; sub-hour forms keep firing through a repeated hour and skip a missing
 * one (croner's rules, which follow Vixie cron).
 *
 * The machine's zone (no zone given) is looked up only when a schedule is first asked for its zone or
 * its next fire: the first `Intl.DateTimeFormat` loads ICU's date and time-zone data, tens of
 * milliseconds, and a daemon whose gorillas all stay caged needs none of it. Checking such a
 * schedule (a valid pattern that fires at all) runs on the machine's local clock, which needs no Intl.
 *
 * @example
 * const schedule = parseSchedule("every 6h", "Europe/Paris");
 * schedule.next(new Date("2025-01-01T04:00:00Z")); // 2025-01-01T05:00:00Z, 06:00 in Paris
 */
import { Cron } from "croner";
import { SparError } from "../../sdk/errors.js";

/** A schedule read: its text, its kind, and when it fires next. */
export interface Schedule {
  /** The text as written (trimmed). */
  text: string;
  /** `interval` for the `every <n><unit>` forms, `cron` for cron expressions and their nicknames. */
  kind: "cron" | "interval";
  /**
   * The croner pattern the schedule fires on, nicknames spelt out (`@daily` is `0 0 * * *`); absent
   * only for `every <n>d` with n ≥ 2, which no cron pattern expresses.
   */
  cron?: string;
  /** For `interval`: the nominal time between fires (n × the unit), real gaps differ across DST. */
  interval_ms?: number;
  /** The IANA time zone the times are read in (the machine's is looked up on first read). */
  readonly timezone: string;
  /** The first fire strictly after `after`, or null when it never fires again. */
  next(after: Date): Date | null;
}

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const MAX_DAYS = 366;

/** Cron's nicknames as patterns, and the friendly words: the first three without their `@`. */
const NAMED = new Map<string, string>([
  ["hourly", "0 * * * *"],
  ["daily", "0 0 * * *"],
  ["weekly", "0 0 * * 0"],
  ["@hourly", "0 * * * *"],
  ["@daily", "0 0 * * *"],
  ["@midnight", "0 0 * * *"],
  ["@weekly", "0 0 * * 0"],
  ["@monthly", "0 0 1 * *"],
  ["@yearly", "0 0 1 1 *"],
  ["@annually", "0 0 1 1 *"],
]);

type Unit = "s" | "m" | "h" | "d";
const UNITS = new Map<string, Unit>();
for (const [unit, spellings] of [
  ["s", "s sec secs second seconds"],
  ["m", "m min mins minute minutes"],
  ["h", "h hr hrs hour hours"],
  ["d", "d day days"],
] as const) {
  for (const spelling of spellings.split(" ")) UNITS.set(spelling, unit);
}
const EVERY = /^every\s+(\d{1,4})\s*([a-z]+)$/;

const FORMS =
  'a cron expression (5 fields, or 6 with seconds first, e.g. "0 */6 * * *") or one of: every <n>s, every <n>m, every <n>h, every <n>d, hourly, daily, weekly';

/** The machine's time zone, as Intl reports it (UTC when it reports none). */
export function machineTimezone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
}

/**
 * Reads a schedule in `timezone` (default: the machine's, looked up when first needed). Throws
 * VALIDATION_FAILED saying what is wrong with the text or the zone, with `schedule` or `timezone` in
 * the error's fields.
 */
export function parseSchedule(text: string, timezone?: string): Schedule {
  if (timezone !== undefined) checkTimezone(timezone);
  const trimmed = text.trim();
  if (trimmed === "") throw bad(trimmed, `is empty; give ${FORMS}`);
  const lower = trimmed.toLowerCase().replace(/\s+/g, " ");
  const named = NAMED.get(lower);
  if (named) return cronSchedule(trimmed, named, timezone);
  const every = EVERY.exec(lower);
  if (every) return intervalSchedule(trimmed, Number(every[1]), every[2] as string, timezone);
  if (lower.startsWith("every")) {
    throw bad(
      trimmed,
      "is not a friendly form: write every <n> and a unit, e.g. every 30m, every 6h, every 2d",
    );
  }
  if (!trimmed.startsWith("@")) {
    const fields = trimmed.split(/\s+/).length;
    if (fields !== 5 && fields !== 6) {
      throw bad(trimmed, `has ${fields} field${fields === 1 ? "" : "s"}; give ${FORMS}`);
    }
  }
  return cronSchedule(trimmed, trimmed.replace(/\s+/g, " "), timezone);
}

function intervalSchedule(text: string, n: number, unitWord: string, timezone: Zone): Schedule {
  const unit = UNITS.get(unitWord);
  if (!unit) throw bad(text, `has the unit "${unitWord}"; use s, m, h or d (seconds, minutes, hours, days)`);
  if (n < 1) throw bad(text, "needs a count of 1 or more");
  const ms = n * { s: SECOND, m: MINUTE, h: HOUR, d: DAY }[unit];
  if (unit === "d") {
    if (n > MAX_DAYS) throw bad(text, `is too far apart: at most every ${MAX_DAYS}d`);
    if (n === 1) return cronSchedule(text, "0 0 * * *", timezone, ms);
    return everyNthDay(text, n, ms, timezone);
  }
  const whole = unit === "h" ? 24 : 60;
  if (whole % n !== 0) {
    const fits = divisors(whole);
    const span = { s: "a minute", m: "an hour", h: "a day" }[unit];
    throw bad(
      text,
      `does not divide ${span} evenly, so its runs could not be evenly spaced on the clock; use every ${fits.slice(0, -1).join(", ")} or ${fits.at(-1)}${unit}, or write a cron expression`,
    );
  }
  if (n === whole) {
    // every 60s = every 1m, every 60m = every 1h, every 24h = every 1d.
    const pattern = { s: "0 * * * * *", m: "0 * * * *", h: "0 0 * * *" }[unit];
    return cronSchedule(text, pattern, timezone, ms);
  }
  const step = n === 1 ? "*" : `*/${n}`;
  const pattern = { s: `${step} * * * * *`, m: `${step} * * * *`, h: `0 ${step} * * *` }[unit];
  return cronSchedule(text, pattern, timezone, ms);
}

/** A schedule's zone as given: an IANA name, or undefined for the machine's (looked up when needed). */
type Zone = string | undefined;

/** A schedule's next fire, once its zone is known. */
type NextFire = (after: Date) => Date | null;

function cronSchedule(text: string, pattern: string, timezone: Zone, interval_ms?: number): Schedule {
  const cron = (zone: Zone) =>
    new Cron(pattern, {
      paused: true,
      mode: "5-or-6-parts",
      ...(zone === undefined ? {} : { timezone: zone }),
    });
  let job: Cron;
  try {
    // In the machine's zone, the pattern is read (and checked) on the local clock: croner's
    // time-zone mode, for the fires themselves, is made when the first one is asked for.
    job = cron(timezone);
  } catch (err) {
    throw bad(text, `is not a valid cron expression: ${cronMessage(err)}`);
  }
  const fields = { text, kind: interval_ms === undefined ? "cron" : "interval", cron: pattern } as const;
  const inZone = (zone: string): NextFire => {
    const zoned = timezone === undefined ? cron(zone) : job;
    return (after) => zoned.nextRun(after);
  };
  const probe: NextFire = (after) => job.nextRun(after);
  return finished(interval_ms === undefined ? fields : { ...fields, interval_ms }, timezone, inZone, probe);
}

/**
 * `every <n>d`: 00:00 local on the dates whose day number since 1970-01-01 is a multiple of n. Local
 * midnight comes from croner's `0 0 * * *`, which already knows the zone's DST rules (a midnight that
 * does not exist fires at the first valid time after the gap, the same day).
 */
function everyNthDay(text: string, n: number, ms: number, timezone: Zone): Schedule {
  /** The n-th midnights by `midnight`, each midnight's date told by `dayNumber`. */
  const counted =
    (midnight: Cron, dayNumber: (at: Date) => number): NextFire =>
    (after) => {
      let at: Date | null = after;
      // A counted day comes within n midnights; 2n covers a zone that once skipped a whole date.
      for (let i = 0; i < 2 * n + 2 && at; i++) {
        at = midnight.nextRun(at);
        if (at && dayNumber(at) % n === 0) return at;
      }
      return null;
    };
  const inZone = (zone: string): NextFire => {
    const dateOf = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      year: "numeric",
      month: "numeric",
      day: "numeric",
    });
    return counted(new Cron("0 0 * * *", { paused: true, timezone: zone }), (at) => {
      const part = (type: string) => Number(dateOf.formatToParts(at).find((p) => p.type === type)?.value);
      return Math.round(Date.UTC(part("year"), part("month") - 1, part("day")) / DAY);
    });
  };
  const given = timezone === undefined ? undefined : inZone(timezone);
  // The check's clock for the machine's zone: local midnights, local dates, no Intl.
  const probe =
    given ??
    counted(new Cron("0 0 * * *", { paused: true }), (at) =>
      Math.round(Date.UTC(at.getFullYear(), at.getMonth(), at.getDate()) / DAY),
    );
  return finished(
    { text, kind: "interval", interval_ms: ms },
    timezone,
    (zone) => given ?? inZone(zone),
    probe,
  );
}

/**
 * The schedule, frozen, once `probe` (its next fire: in its zone when one was given, on the local
 * clock for the machine's) shows it fires at all. `inZone` makes its next fire in its zone, when the
 * first one is asked for.
 */
function finished(
  fields: Pick<Schedule, "text" | "kind" | "cron" | "interval_ms">,
  timezone: Zone,
  inZone: (zone: string) => NextFire,
  probe: NextFire,
): Schedule {
  let zone = timezone;
  let zoned: NextFire | undefined;
  const zoneOf = () => {
    zone ??= machineTimezone();
    return zone;
  };
  const schedule: Schedule = {
    ...fields,
    get timezone() {
      return zoneOf();
    },
    next: (after) => {
      zoned ??= inZone(zoneOf());
      return zoned(after);
    },
  };
  if (probe(new Date()) === null) throw bad(schedule.text, "never fires");
  return Object.freeze(schedule);
}

function checkTimezone(timezone: string): void {
  // Offsets ("+01:00") are time zones to newer Intl (Node 24) but not to older: only names are taken,
  // the same on every runtime (a fixed offset is Etc/GMT-1).
  let valid = timezone.trim() !== "" && timezone === timezone.trim() && !/^[+\-\u2212]/.test(timezone);
  if (valid) {
    try {
      new Intl.DateTimeFormat("en", { timeZone: timezone });
    } catch {
      valid = false;
    }
  }
  if (!valid) {
    throw new SparError(
      "VALIDATION_FAILED",
      `time zone "${timezone}" is not an IANA time zone name, e.g. Europe/Paris, America/New_York or UTC`,
      { timezone },
    );
  }
}

function cronMessage(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).replace(/^CronPattern:\s*/, "");
}

function divisors(whole: number): number[] {
  return Array.from({ length: whole }, (_, i) => i + 1).filter((d) => whole % d === 0);
}

function bad(text: string, problem: string): SparError {
  return new SparError("VALIDATION_FAILED", `schedule "${text}" ${problem}`, { schedule: text });
}
