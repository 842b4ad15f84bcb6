import { describe, expect, it } from "vitest";
import { checkTimeZone, periodOf } from "./periods.js";

const iso = (ms: number) => new Date(ms).toISOString();

describe("budget periods", () => {
  it("turns a day at local midnight, and a month on the 1st", () => {
    const day = periodOf("daily", Date.parse("2025-06-15T23:30:00Z"), "Europe/Lisbon");
    // Lisbon is UTC+1 in June: 23:30 UTC is already the 16th there.
    expect(day.key).toBe("2025-06-16");
    expect(iso(day.starts_at)).toBe("2025-06-15T23:00:00.000Z");
    expect(iso(day.resets_at)).toBe("2025-06-16T23:00:00.000Z");
    const month = periodOf("monthly", Date.parse("2025-06-30T23:30:00Z"), "Europe/Lisbon");
    expect(month.key).toBe("2025-07");
    expect(iso(month.starts_at)).toBe("2025-06-30T23:00:00.000Z");
    expect(iso(month.resets_at)).toBe("2025-07-31T23:00:00.000Z");
  });

  it("lasts 23 hours on the day clocks go forward and 25 on the day they go back", () => {
    const spring = periodOf("daily", Date.parse("2025-03-09T12:00:00Z"), "America/New_York");
    expect(spring.key).toBe("2025-03-09");
    expect((spring.resets_at - spring.starts_at) / 3_600_000).toBe(23);
    const autumn = periodOf("daily", Date.parse("2025-11-02T12:00:00Z"), "America/New_York");
    expect((autumn.resets_at - autumn.starts_at) / 3_600_000).toBe(25);
    expect(iso(autumn.starts_at)).toBe("2025-11-02T04:00:00.000Z");
  });

  it("begins a day whose midnight is skipped at its first instant", () => {
    // Santiago moved its clocks from 00:00 to 01:00 on 2024-09-08.
    const day = periodOf("daily", Date.parse("2024-09-08T15:00:00Z"), "America/Santiago");
    expect(iso(day.starts_at)).toBe("2024-09-08T04:00:00.000Z");
    expect((day.resets_at - day.starts_at) / 3_600_000).toBe(23);
  });

  it("ends months of every length and the year, in the time zone", () => {
    const feb = periodOf("monthly", Date.parse("2024-02-29T12:00:00Z"), "UTC");
    expect([feb.key, iso(feb.resets_at)]).toEqual(["2024-02", "2024-03-01T00:00:00.000Z"]);
    const dec = periodOf("monthly", Date.parse("2025-12-31T20:00:00Z"), "Asia/Tokyo");
    expect([dec.key, iso(dec.starts_at), iso(dec.resets_at)]).toEqual([
      "2026-01",
      "2025-12-31T15:00:00.000Z",
      "2026-01-31T15:00:00.000Z",
    ]);
    const kiritimati = periodOf("daily", Date.parse("2025-01-01T09:59:00Z"), "Pacific/Kiritimati");
    expect([kiritimati.key, iso(kiritimati.starts_at)]).toEqual(["2025-01-01", "2024-12-31T10:00:00.000Z"]);
  });

  it("refuses a time zone the runtime does not know, naming the key", () => {
    expect(() => checkTimeZone("Mars/Olympus")).toThrow(/budgets\.time_zone/);
    expect(checkTimeZone("Europe/Lisbon")).toBe("Europe/Lisbon");
  });
});
