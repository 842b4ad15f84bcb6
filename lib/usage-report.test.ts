import { describe, expect, it } from "vitest";
import { isSparError, SparError } from "../sdk/errors.js";
import type { Store, UsageGroup, UsageQuery } from "../sdk/store-types.js";
import { unitsOfMicros, usageReport, zoneOffsets } from "./usage-report.js";

const group = (key: string, cost_micros: number | null, extra: Partial<UsageGroup> = {}): UsageGroup => ({
  key,
  requests: 1,
  input_tokens: 10,
  output_tokens: 2,
  cached_tokens: 1,
  cache_write_tokens: 0,
  cost_micros,
  unpriced_requests: cost_micros === null ? 1 : 0,
  ...extra,
});

/** A store that answers `groups` and keeps the query it was asked. */
function fakeStore(groups: UsageGroup[], names: Record<string, string> = {}) {
  const asked: UsageQuery[] = [];
  const store = {
    usage: {
      query: async (q: UsageQuery) => {
        asked.push(q);
        return groups;
      },
    },
    fighters: {
      get: async (id: string) => (names[id] ? { id, name: names[id] } : undefined),
    },
  } as unknown as Store;
  return { store, asked };
}

const NOW = new Date("2026-03-31T10:00:00.000Z");

async function report(request: Parameters<typeof usageReport>[0], groups: UsageGroup[] = []) {
  const { store, asked } = fakeStore(groups, { f1: "ada" });
  const body = await usageReport(request, {
    store,
    now: () => NOW,
    fighterId: async (idOrName) => {
      if (idOrName === "ada" || idOrName === "f1") return "f1";
      throw new SparError("FIGHTER_NOT_FOUND", `no fighter with id or name "${idOrName}"`);
    },
  });
  return { body, query: asked[0] };
}

async function refusal(request: Parameters<typeof usageReport>[0]) {
  try {
    await report(request);
  } catch (err) {
    if (isSparError(err)) return { code: err.code, message: err.message, path: err.extra.path };
    throw err;
  }
  throw new Error("not refused");
}

describe("unitsOfMicros", () => {
  it("writes micro-units out as a decimal, with no float drift", () => {
    expect(unitsOfMicros(0)).toBe(0);
    expect(unitsOfMicros(248)).toBe(0.000248);
    expect(unitsOfMicros(9525)).toBe(0.009525);
    expect(unitsOfMicros(100_000 + 200_000)).toBe(0.3);
    expect(unitsOfMicros(4_000_000_000_001)).toBe(4_000_000.000001);
    expect(String(unitsOfMicros(1_234_567_890))).toBe("1234.56789");
  });
});

describe("zoneOffsets", () => {
  it("finds a daylight-saving change to the second, and none in a zone without", () => {
    const since = Date.parse("2026-03-01T00:00:00.000Z");
    const until = Date.parse("2026-04-30T23:00:00.000Z");
    // Lisbon leaves WET (+0) for WEST (+1) at 01:00 UTC on the last Sunday of March.
    expect(zoneOffsets(since, until, "Europe/Lisbon")).toEqual([
      { from: "2026-03-01T00:00:00.000Z", minutes: 0 },
      { from: "2026-03-29T01:00:00.000Z", minutes: 60 },
    ]);
    expect(zoneOffsets(since, until, "America/New_York")).toEqual([
      { from: "2026-03-01T00:00:00.000Z", minutes: -300 },
      { from: "2026-03-08T07:00:00.000Z", minutes: -240 },
    ]);
    expect(zoneOffsets(since, until, "Asia/Kolkata")).toEqual([
      { from: "2026-03-01T00:00:00.000Z", minutes: 330 },
    ]);
  });
});

describe("usageReport", () => {
  it("asks for the last 30 days by day in the zone, and sums the groups into the total", async () => {
    const { body, query } = await report({ tz: "Europe/Lisbon" }, [
      group("2026-03-30", 248),
      group("2026-03-31", null),
      group("2026-03-31b", 9525),
    ]);
    expect(query).toMatchObject({
      by: "day",
      // 30 days, today (March 31st in Lisbon) included: March 2nd's midnight (WET) to April 1st's (WEST).
      since: "2026-03-02T00:00:00.000Z",
      until: "2026-03-31T23:00:00.000Z",
      days: [
        { from: "2026-03-02T00:00:00.000Z", minutes: 0 },
        { from: "2026-03-29T01:00:00.000Z", minutes: 60 },
      ],
    });
    expect(body.usage[0]).toEqual({
      key: "2026-03-30",
      requests: 1,
      input_tokens: 10,
      output_tokens: 2,
      cached_tokens: 1,
      cache_write_tokens: 0,
      cost: 0.000248,
      currency: "USD",
      unpriced_requests: 0,
    });
    expect(body.usage[1]?.cost).toBeNull();
    expect(body.total).toEqual({
      requests: 3,
      input_tokens: 30,
      output_tokens: 6,
      cached_tokens: 3,
      cache_write_tokens: 0,
      cost: 0.009773,
      currency: "USD",
      unpriced_requests: 1,
    });
  });

  it("gives a null total cost when no call was priced, and an empty report its zeros", async () => {
    expect((await report({}, [group("a", null)])).body.total).toMatchObject({
      cost: null,
      unpriced_requests: 1,
    });
    expect((await report({})).body).toEqual({
      usage: [],
      total: {
        requests: 0,
        input_tokens: 0,
        output_tokens: 0,
        cached_tokens: 0,
        cache_write_tokens: 0,
        cost: null,
        currency: "USD",
        unpriced_requests: 0,
      },
    });
  });

  it("takes dates (until through its end), n days and instants, and passes the filters", async () => {
    const { query } = await report({
      by: "model",
      since: "2026-03-01",
      until: "2026-03-02",
      tz: "UTC",
      fighter: "ada",
      origin: "channel",
      provider: "openai",
      model: "gpt-4o-mini",
    });
    expect(query).toEqual({
      by: "model",
      since: "2026-03-01T00:00:00.000Z",
      until: "2026-03-03T00:00:00.000Z",
      fighter_id: "f1",
      origin: "channel",
      provider: "openai",
      model: "gpt-4o-mini",
    });
    expect((await report({ since: "7d", tz: "UTC" })).query?.since).toBe("2026-03-25T00:00:00.000Z");
    expect((await report({ since: "2026-03-30T12:00:00+01:00", tz: "UTC" })).query?.since).toBe(
      "2026-03-30T11:00:00.000Z",
    );
  });

  it("names fighters in by=fighter (ordered by name), a fighter the store no longer names by its id", async () => {
    const { body } = await report({ by: "fighter" }, [group("f-gone", 2), group("f1", 1)]);
    expect(body.usage.map((u) => u.key)).toEqual(["ada", "f-gone"]);
  });

  it("refuses a bad parameter with VALIDATION_FAILED naming it, and an unknown fighter", async () => {
    for (const [request, parameter] of [
      [{ by: "week" }, "by"],
      [{ since: "yesterday" }, "since"],
      [{ since: "0d" }, "since"],
      [{ since: "2026-02-30" }, "since"],
      [{ since: "1999-12-31" }, "since"],
      [{ until: "7d" }, "until"],
      [{ since: "2026-03-10", until: "2026-03-09" }, "since"],
      [{ tz: "Mars/Olympus" }, "tz"],
      [{ tz: "+01:00" }, "tz"],
      [{ provider: "" }, "provider"],
    ] as const) {
      const refused = await refusal(request);
      expect(refused.code, JSON.stringify(request)).toBe("VALIDATION_FAILED");
      expect(refused.path).toBe(`/querystring/${parameter}`);
      expect(refused.message).toContain(`?${parameter}`);
    }
    expect((await refusal({ origin: "" })).message).toContain("?origin");
    expect((await refusal({ fighter: "nobody" })).code).toBe("FIGHTER_NOT_FOUND");
  });
});
