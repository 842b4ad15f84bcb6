import { describe, expect, it } from "vitest";
import { isSparError } from "../../sdk/errors.js";
import { machineTimezone, parseSchedule, type Schedule } from "./schedule.js";

/** Counts the Intl.DateTimeFormat instances made while `body` runs (ICU's date and time-zone data). */
function countDateTimeFormats(body: (made: () => number) => void): void {
  const original = Intl.DateTimeFormat;
  let made = 0;
  Intl.DateTimeFormat = new Proxy(original, {
    construct(target, args) {
      made++;
      return Reflect.construct(target, args);
    },
    apply(target, self, args) {
      made++;
      return Reflect.apply(target, self, args);
    },
  });
  try {
    body(() => made);
  } finally {
    Intl.DateTimeFormat = original;
  }
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** The next `count` fires after `from`, as ISO strings. */
function runs(schedule: Schedule, from: string, count: number): string[] {
  const out: string[] = [];
  let at: Date | null = new Date(from);
  for (let i = 0; i < count; i++) {
    at = schedule.next(at as Date);
    if (!at) break;
    out.push(at.toISOString());
  }
  return out;
}

/** The gaps between consecutive fires, in milliseconds. */
function gaps(times: readonly string[]): number[] {
  return times.slice(1).map((t, i) => Date.parse(t) - Date.parse(times[i] as string));
}

/** The error `fn` throws, checked to be VALIDATION_FAILED. */
function refusal(fn: () => unknown) {
  try {
    fn();
  } catch (err) {
    expect(isSparError(err, "VALIDATION_FAILED"), String(err)).toBe(true);
    return err as Error & { extra: Record<string, unknown> };
  }
  throw new Error("expected a VALIDATION_FAILED error, got none");
}

describe("cron expressions", () => {
  it("read five fields in the schedule's time zone", () => {
    const schedule = parseSchedule("0 */6 * * *", "UTC");
    expect(schedule).toMatchObject({
      text: "0 */6 * * *",
      kind: "cron",
      cron: "0 */6 * * *",
      timezone: "UTC",
    });
    expect(schedule.interval_ms).toBeUndefined();
    expect(runs(schedule, "2025-01-01T01:00:00Z", 3)).toEqual([
      "2025-01-01T06:00:00.000Z",
      "2025-01-01T12:00:00.000Z",
      "2025-01-01T18:00:00.000Z",
    ]);
  });

  it("read six fields as seconds first", () => {
    const schedule = parseSchedule("*/10 * * * * *", "UTC");
    expect(runs(schedule, "2025-01-01T00:00:05Z", 3)).toEqual([
      "2025-01-01T00:00:10.000Z",
      "2025-01-01T00:00:20.000Z",
      "2025-01-01T00:00:30.000Z",
    ]);
  });

  it("keep croner's extensions and collapse extra spaces", () => {
    // The last Friday of each month at 17:30.
    const schedule = parseSchedule("  30   17 * *  FRI#L ", "UTC");
    expect(schedule.text).toBe("30   17 * *  FRI#L");
    expect(schedule.cron).toBe("30 17 * * FRI#L");
    expect(runs(schedule, "2025-01-01T00:00:00Z", 2)).toEqual([
      "2025-01-31T17:30:00.000Z",
      "2025-02-28T17:30:00.000Z",
    ]);
  });

  it("spell out the @ nicknames", () => {
    const cases: [string, string][] = [
      ["@hourly", "0 * * * *"],
      ["@daily", "0 0 * * *"],
      ["@midnight", "0 0 * * *"],
      ["@weekly", "0 0 * * 0"],
      ["@monthly", "0 0 1 * *"],
      ["@yearly", "0 0 1 1 *"],
      ["@annually", "0 0 1 1 *"],
    ];
    for (const [text, cron] of cases) {
      expect(parseSchedule(text, "UTC"), text).toMatchObject({ kind: "cron", cron });
    }
    expect(runs(parseSchedule("@monthly", "UTC"), "2025-01-15T00:00:00Z", 2)).toEqual([
      "2025-02-01T00:00:00.000Z",
      "2025-03-01T00:00:00.000Z",
    ]);
  });

  it("fire strictly after the given time", () => {
    const schedule = parseSchedule("0 * * * *", "UTC");
    expect(schedule.next(new Date("2025-01-01T01:00:00Z"))?.toISOString()).toBe("2025-01-01T02:00:00.000Z");
    expect(schedule.next(new Date("2025-01-01T00:59:59.999Z"))?.toISOString()).toBe(
      "2025-01-01T01:00:00.000Z",
    );
  });

  it("follow the time zone: 09:00 on weekdays in New York", () => {
    const schedule = parseSchedule("0 9 * * 1-5", "America/New_York");
    // Friday 2025-01-03 10:00 EST: the next is Monday 09:00 EST = 14:00 UTC.
    expect(runs(schedule, "2025-01-03T15:00:00Z", 2)).toEqual([
      "2025-01-06T14:00:00.000Z",
      "2025-01-07T14:00:00.000Z",
    ]);
  });
});

describe("friendly forms", () => {
  it("hourly, daily and weekly are cron's @hourly, @daily and @weekly", () => {
    expect(parseSchedule("hourly", "UTC")).toMatchObject({ kind: "cron", cron: "0 * * * *" });
    expect(parseSchedule("Daily", "UTC")).toMatchObject({ kind: "cron", cron: "0 0 * * *" });
    const weekly = parseSchedule("weekly", "UTC");
    expect(weekly).toMatchObject({ kind: "cron", cron: "0 0 * * 0" });
    // 2025-01-01 is a Wednesday: the next Sundays at midnight.
    expect(runs(weekly, "2025-01-01T00:00:00Z", 2)).toEqual([
      "2025-01-05T00:00:00.000Z",
      "2025-01-12T00:00:00.000Z",
    ]);
    expect(runs(parseSchedule("daily", "UTC"), "2025-01-01T10:00:00Z", 1)).toEqual([
      "2025-01-02T00:00:00.000Z",
    ]);
  });

  it("every <n>s fires on the seconds of the minute that are multiples of n", () => {
    const one = parseSchedule("every 1s", "UTC");
    expect(one).toMatchObject({ kind: "interval", cron: "* * * * * *", interval_ms: 1000 });
    expect(runs(one, "2025-01-01T00:00:00.400Z", 3)).toEqual([
      "2025-01-01T00:00:01.000Z",
      "2025-01-01T00:00:02.000Z",
      "2025-01-01T00:00:03.000Z",
    ]);
    const fifteen = parseSchedule("every 15s", "UTC");
    expect(fifteen).toMatchObject({ cron: "*/15 * * * * *", interval_ms: 15_000 });
    expect(runs(fifteen, "2025-01-01T00:00:50Z", 2)).toEqual([
      "2025-01-01T00:01:00.000Z",
      "2025-01-01T00:01:15.000Z",
    ]);
  });

  it("every <n>m fires on the minutes of the hour that are multiples of n", () => {
    const schedule = parseSchedule("every 30m", "UTC");
    expect(schedule).toMatchObject({ kind: "interval", cron: "*/30 * * * *", interval_ms: 30 * MINUTE });
    expect(runs(schedule, "2025-01-01T00:10:00Z", 3)).toEqual([
      "2025-01-01T00:30:00.000Z",
      "2025-01-01T01:00:00.000Z",
      "2025-01-01T01:30:00.000Z",
    ]);
  });

  it("every <n>h fires on the hours of the day that are multiples of n, at minute 0", () => {
    const schedule = parseSchedule("every 6h", "UTC");
    expect(schedule).toMatchObject({ kind: "interval", cron: "0 */6 * * *", interval_ms: 6 * HOUR });
    expect(runs(schedule, "2025-01-01T19:00:00Z", 2)).toEqual([
      "2025-01-02T00:00:00.000Z",
      "2025-01-02T06:00:00.000Z",
    ]);
  });

  it("every 1d is midnight every day", () => {
    expect(parseSchedule("every 1d", "UTC")).toMatchObject({
      kind: "interval",
      cron: "0 0 * * *",
      interval_ms: DAY,
    });
  });

  it("every <n>d fires at midnight on every n-th day counted from 1970-01-01", () => {
    const two = parseSchedule("every 2d", "UTC");
    expect(two.kind).toBe("interval");
    expect(two.cron).toBeUndefined();
    expect(two.interval_ms).toBe(2 * DAY);
    // 2025-01-01 is day 20089 since 1970-01-01 (odd), 2025-01-02 is day 20090.
    expect(runs(two, "2025-01-01T00:00:00Z", 3)).toEqual([
      "2025-01-02T00:00:00.000Z",
      "2025-01-04T00:00:00.000Z",
      "2025-01-06T00:00:00.000Z",
    ]);
    // Across a month's end the count goes on: no short gap on the 31st.
    expect(gaps(runs(two, "2025-01-25T00:00:00Z", 6))).toEqual(Array(5).fill(2 * DAY));
    // 20089 = 3 × 6696 + 1, so every 3d fires first on day 20091.
    expect(runs(parseSchedule("every 3d", "UTC"), "2025-01-01T00:00:00Z", 1)).toEqual([
      "2025-01-03T00:00:00.000Z",
    ]);
    expect(gaps(runs(parseSchedule("every 366d", "UTC"), "2025-01-01T00:00:00Z", 3))).toEqual([
      366 * DAY,
      366 * DAY,
    ]);
  });

  it("every 60s, 60m and 24h are the next unit's every 1", () => {
    expect(parseSchedule("every 60s", "UTC")).toMatchObject({ cron: "0 * * * * *", interval_ms: MINUTE });
    expect(parseSchedule("every 60m", "UTC")).toMatchObject({ cron: "0 * * * *", interval_ms: HOUR });
    expect(parseSchedule("every 24h", "UTC")).toMatchObject({ cron: "0 0 * * *", interval_ms: DAY });
  });

  it("accept spelt-out units, any case and spacing", () => {
    const same: [string, string][] = [
      ["every 30 minutes", "*/30 * * * *"],
      ["Every 30min", "*/30 * * * *"],
      ["every  5 mins", "*/5 * * * *"],
      ["every 10 seconds", "*/10 * * * * *"],
      ["every 2 sec", "*/2 * * * * *"],
      ["every 4 hours", "0 */4 * * *"],
      ["EVERY 3 HRS", "0 */3 * * *"],
      ["every 1 day", "0 0 * * *"],
    ];
    for (const [text, cron] of same) {
      const schedule = parseSchedule(text, "UTC");
      expect(schedule.cron, text).toBe(cron);
      expect(schedule.text).toBe(text.trim());
    }
    expect(parseSchedule("every 2 days", "UTC").interval_ms).toBe(2 * DAY);
  });

  it("are frozen", () => {
    const schedule = parseSchedule("every 30m", "UTC");
    expect(Object.isFrozen(schedule)).toBe(true);
  });
});

describe("time zones", () => {
  it("default to the machine's", () => {
    expect(parseSchedule("daily").timezone).toBe(machineTimezone());
    expect(machineTimezone()).toBe(Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC");
  });

  it("look the machine's up only when a schedule is first asked for its zone or its next fire", () => {
    countDateTimeFormats((made) => {
      const texts = ["daily", "every 2d", "every 30m", "0 9 * * 1-5", "*/10 * * * * *"];
      const [daily, ...others] = texts.map((text) => parseSchedule(text));
      expect(made()).toBe(0);
      expect(daily?.timezone).toBe(machineTimezone());
      expect(made()).toBeGreaterThan(0);
      // The fires are those of the same schedule in the machine's zone named.
      const from = new Date("2025-03-29T12:00:00Z");
      for (const [i, schedule] of [daily, ...others].entries()) {
        const named = parseSchedule(texts[i] as string, machineTimezone());
        expect(schedule?.next(from)).toEqual(named.next(from));
        expect(schedule).toMatchObject({ text: named.text, kind: named.kind, timezone: named.timezone });
      }
    });
  });

  it("refuse a schedule that never fires in the machine's zone too", () => {
    expect(refusal(() => parseSchedule("0 0 30 2 *")).message).toMatch(/never fires/);
    expect(refusal(() => parseSchedule("every 7m")).message).toMatch(/does not divide an hour/);
  });

  it("place friendly forms on the local clock, half-hour and 45-minute offsets included", () => {
    // Kolkata is UTC+05:30: 00:00 UTC is 05:30 there, and the next 6-hour mark is 06:00 local.
    expect(runs(parseSchedule("every 6h", "Asia/Kolkata"), "2025-01-01T00:00:00Z", 2)).toEqual([
      "2025-01-01T00:30:00.000Z",
      "2025-01-01T06:30:00.000Z",
    ]);
    // Kathmandu is UTC+05:45: every 20m fires at :00, :20, :40 local, i.e. :15, :35, :55 UTC.
    expect(runs(parseSchedule("every 20m", "Asia/Kathmandu"), "2025-01-01T00:00:00Z", 3)).toEqual([
      "2025-01-01T00:15:00.000Z",
      "2025-01-01T00:35:00.000Z",
      "2025-01-01T00:55:00.000Z",
    ]);
    // Local midnight in Tokyo (UTC+09:00) is 15:00 UTC the day before.
    expect(runs(parseSchedule("daily", "Asia/Tokyo"), "2025-01-01T00:00:00Z", 1)).toEqual([
      "2025-01-01T15:00:00.000Z",
    ]);
  });

  it("accept any case of an IANA name", () => {
    expect(runs(parseSchedule("daily", "europe/paris"), "2025-01-01T12:00:00Z", 1)).toEqual([
      "2025-01-01T23:00:00.000Z",
    ]);
  });

  it("keep sub-hour forms evenly spaced in real time across both DST changes", () => {
    const schedule = parseSchedule("every 30m", "Europe/Berlin");
    // 2025-03-30 02:00 CET jumps to 03:00 CEST (01:00 UTC): 01:30 local, then 03:00 local.
    const spring = runs(schedule, "2025-03-30T00:10:00Z", 5);
    expect(spring[0]).toBe("2025-03-30T00:30:00.000Z");
    expect(gaps(spring)).toEqual(Array(4).fill(30 * MINUTE));
    // 2025-10-26 03:00 CEST falls back to 02:00 CET (01:00 UTC): the repeated hour fires twice.
    const fall = runs(schedule, "2025-10-25T23:50:00Z", 6);
    expect(fall).toEqual([
      "2025-10-26T00:00:00.000Z",
      "2025-10-26T00:30:00.000Z",
      "2025-10-26T01:00:00.000Z",
      "2025-10-26T01:30:00.000Z",
      "2025-10-26T02:00:00.000Z",
      "2025-10-26T02:30:00.000Z",
    ]);
  });

  it("keep hour and day forms on the wall clock across a DST change", () => {
    // every 6h in Berlin on 2025-03-30: 00:00 CET (23:00 UTC), then 06:00 CEST (04:00 UTC): 5 real hours.
    const sixHours = runs(parseSchedule("every 6h", "Europe/Berlin"), "2025-03-29T20:00:00Z", 5);
    expect(sixHours).toEqual([
      "2025-03-29T23:00:00.000Z",
      "2025-03-30T04:00:00.000Z",
      "2025-03-30T10:00:00.000Z",
      "2025-03-30T16:00:00.000Z",
      "2025-03-30T22:00:00.000Z",
    ]);
    // daily in Berlin across the fall change: midnight CEST, then midnight CET 25 hours later.
    expect(gaps(runs(parseSchedule("daily", "Europe/Berlin"), "2025-10-25T12:00:00Z", 2))).toEqual([
      25 * HOUR,
    ]);
    // every 2d in New York across 2025-03-09 (EST to EDT): midnight on days 20156 and 20158, 47 hours apart.
    expect(runs(parseSchedule("every 2d", "America/New_York"), "2025-03-08T12:00:00Z", 2)).toEqual([
      "2025-03-09T05:00:00.000Z",
      "2025-03-11T04:00:00.000Z",
    ]);
  });

  it("fire every n-th day even where local midnight does not exist", () => {
    // Santiago moved its clocks from 00:00 to 01:00 on 2024-09-08 (day 19974): that day's run is at
    // 01:00 local, the first valid time, and the next one two days later at midnight.
    expect(runs(parseSchedule("every 2d", "America/Santiago"), "2024-09-07T00:00:00Z", 2)).toEqual([
      "2024-09-08T04:00:00.000Z",
      "2024-09-10T03:00:00.000Z",
    ]);
  });
});

describe("bad schedules", () => {
  const cases: [string, RegExp][] = [
    ["", /is empty/],
    ["   ", /is empty/],
    ["every 7m", /does not divide an hour evenly.*every 1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30 or 60m/],
    ["every 45s", /does not divide a minute evenly/],
    ["every 5h", /does not divide a day evenly.*every 1, 2, 3, 4, 6, 8, 12 or 24h/],
    ["every 90m", /does not divide an hour evenly/],
    ["every 0s", /a count of 1 or more/],
    ["every 400d", /at most every 366d/],
    ["every 3 weeks", /unit "weeks"/],
    ["every day", /not a friendly form/],
    ["every", /not a friendly form/],
    ["every 1.5h", /not a friendly form/],
    ["twice a day", /has 3 fields/],
    ["* * * *", /has 4 fields/],
    ["0 0 * * * * 2030", /has 7 fields/],
    ["61 * * * *", /not a valid cron expression.*minute/],
    ["0 25 * * *", /not a valid cron expression/],
    ["0 0 * * MOO", /not a valid cron expression/],
    ["@reboot", /not a valid cron expression/],
    ["@sometimes", /not a valid cron expression/],
    ["constructor", /has 1 field;/],
    ["every 3 constructor", /unit "constructor"/],
    ["0 0 30 2 *", /never fires/],
  ];
  for (const [text, message] of cases) {
    it(`refuses ${JSON.stringify(text)}`, () => {
      const err = refusal(() => parseSchedule(text, "UTC"));
      expect(err.message).toMatch(message);
      expect(err.message).toContain(`schedule "${text.trim()}"`);
      expect(err.extra.schedule).toBe(text.trim());
    });
  }

  for (const zone of ["Mars/Olympus_Mons", "", " UTC", "+01:00", "Europe/Paris "]) {
    it(`refuses the time zone ${JSON.stringify(zone)}`, () => {
      const err = refusal(() => parseSchedule("daily", zone));
      expect(err.message).toContain(`time zone "${zone}" is not an IANA time zone name`);
      expect(err.extra.timezone).toBe(zone);
    });
  }
});
