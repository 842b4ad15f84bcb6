import { describe, expect, it } from "vitest";
import { firstRun, nextCronRun } from "./when.js";

const NOW = new Date("2026-03-01T08:30:00Z");

describe("first run", () => {
  it("reads a time with its offset, a delay, or a cron expression", () => {
    expect(firstRun({ at: "2026-03-01T10:00:00+01:00" }, NOW).next.toISOString()).toBe(
      "2026-03-01T09:00:00.000Z",
    );
    expect(firstRun({ in_minutes: 90 }, NOW).next.toISOString()).toBe("2026-03-01T10:00:00.000Z");
    expect(firstRun({ cron: "0 9 * * *" }, NOW)).toEqual({
      next: new Date("2026-03-01T09:00:00Z"),
      cron: "0 9 * * *",
    });
  });

  it("reads cron in the time zone it is given", () => {
    // 09:00 in Paris on 1 March is 08:00 UTC, already past at 08:30 UTC: the next day's.
    expect(firstRun({ cron: "0 9 * * *", timezone: "Europe/Paris" }, NOW).next.toISOString()).toBe(
      "2026-03-02T08:00:00.000Z",
    );
    expect(nextCronRun("@hourly", undefined, NOW).toISOString()).toBe("2026-03-01T09:00:00.000Z");
  });

  it("refuses what cannot run, saying why", () => {
    const refusal = (input: Record<string, unknown>) => {
      try {
        firstRun(input, NOW);
      } catch (err) {
        return `${(err as { code: string }).code}: ${(err as Error).message}`;
      }
      return "accepted";
    };
    expect(refusal({})).toMatch(
      /^VALIDATION_FAILED: give exactly one of at, in_minutes or cron \(got none\)/,
    );
    expect(refusal({ at: "2026-03-02T09:00:00Z", cron: "* * * * *" })).toMatch(/got at, cron/);
    expect(refusal({ at: "2026-03-02 09:00" })).toMatch(/ISO 8601 time with its offset/);
    expect(refusal({ at: "2026-02-30T09:00:00Z" })).toMatch(/is not a real time/);
    expect(refusal({ at: "2026-03-01T08:00:00Z" })).toMatch(/has passed; it is 2026-03-01T08:30:00.000Z now/);
    expect(refusal({ in_minutes: 60 * 24 * 366 * 11 })).toMatch(/at most ten years ahead/);
    expect(refusal({ cron: "* * * *" })).toMatch(/needs five fields/);
    expect(refusal({ cron: "0 9 * * * *" })).toMatch(/needs five fields/);
    expect(refusal({ cron: "61 9 * * *" })).toMatch(/is not valid/);
    expect(refusal({ cron: "0 9 * * *", timezone: "Mars/Olympus" })).toMatch(/not an IANA time zone/);
    expect(refusal({ in_minutes: 5, timezone: "Europe/Paris" })).toMatch(/timezone goes with cron/);
  });
});
