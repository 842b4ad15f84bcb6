/**
 * Where the tokens go (issue 31 item 4): the usage ledger summed per day, model, fighter, origin or
 * provider over a time range, as `GET /api/v1/usage` answers and `spar usage` prints it. The store
 * sums (Store.usage.query, GROUP BY in SQL); this module reads the request (refusing a bad filter
 * with VALIDATION_FAILED naming it), turns dates into instants in the request's time zone, and
 * turns micro-units into currency units.
 */
import { SparError } from "../sdk/errors.js";
import type { UsageReport, UsageReportRequest, UsageTotal } from "../sdk/services.js";
import type { Store, UsageGroup, UsageGrouping, ZoneOffset } from "../sdk/store-types.js";
import { originFilter } from "./bout-origins.js";

export const USAGE_GROUPINGS: readonly UsageGrouping[] = [
  "day",
  "model",
  "fighter",
  "origin",
  "origin-exact",
  "provider",
];

/** The ledger's only currency today: every shipped and `[[pricing]]` price is in USD (lib/pricing.ts). */
const CURRENCY = "USD";
/** `since` when none is given: the last 30 days, today included. */
const DEFAULT_DAYS = 30;
const MAX_DAYS = 3660;
const DAY_MS = 86_400_000;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DAYS = /^(\d{1,4})d$/;
/** An instant: a date, a time and a zone (`Z` or an offset). */
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})$/;

export interface UsageReportDeps {
  store: Store;
  /** The fighter's id from an id or a name (FIGHTER_NOT_FOUND when there is none). */
  fighterId(idOrName: string): Promise<string>;
  now?: () => Date;
}

/**
 * The ledger's figures for `request`: a row per group, ordered by key, and their total.
 *
 * @example
 * await usageReport({ by: "model", since: "7d" }, deps);
 * // { usage: [{ key: "openai/gpt-4o-mini", requests: 3, …, cost: 0.00021, currency: "USD" }], total: {…} }
 */
export async function usageReport(request: UsageReportRequest, deps: UsageReportDeps): Promise<UsageReport> {
  const by = grouping(request.by);
  const zone = timeZone(request.tz);
  const now = (deps.now ?? (() => new Date()))();
  const { since, until } = range(request, zone, now);
  const fighterId = request.fighter === undefined ? undefined : await deps.fighterId(request.fighter);
  const groups = await deps.store.usage.query({
    by,
    since: new Date(since).toISOString(),
    until: new Date(until).toISOString(),
    ...(fighterId !== undefined ? { fighter_id: fighterId } : {}),
    ...(request.origin !== undefined ? { origin: originFilter(request.origin) } : {}),
    ...(request.provider !== undefined ? { provider: named(request.provider, "provider") } : {}),
    ...(request.model !== undefined ? { model: named(request.model, "model") } : {}),
    ...(by === "day" ? { days: zoneOffsets(since, until, zone) } : {}),
  });
  const keys = by === "fighter" ? await fighterKeys(groups, deps.store) : undefined;
  const rows = groups.map((g) => ({ key: keys?.get(g.key) ?? g.key, ...figures(g) }));
  // The store orders fighters by id; people read them by name.
  if (keys) rows.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return {
    usage: rows,
    total: figures(sum(groups)),
  };
}

/** Micro-units as currency units, exactly: the decimal is written out, then read as the nearest number. */
export function unitsOfMicros(micros: number): number {
  const whole = Math.trunc(micros / 1_000_000);
  const fraction = String(micros - whole * 1_000_000).padStart(6, "0");
  return Number(`${whole}.${fraction}`);
}

/**
 * The zone's UTC offsets from `since` to `until` (unix ms): the first at `since`, then one at each
 * change (daylight saving) in between, found to the second.
 */
export function zoneOffsets(since: number, until: number, zone: string): ZoneOffset[] {
  const offsetAt = offsetReader(zone);
  const offsets: ZoneOffset[] = [{ from: new Date(since).toISOString(), minutes: offsetAt(since) }];
  let before = since;
  let minutes = offsetAt(since);
  for (let at = since + DAY_MS; before < until; at += DAY_MS) {
    const probe = Math.min(at, until);
    const now = offsetAt(probe);
    if (now !== minutes) {
      // The change lies in (before, probe]: halve the interval down to a second.
      let lo = before;
      let hi = probe;
      while (hi - lo > 1000) {
        const mid = Math.floor((lo + hi) / 2000) * 1000;
        if (offsetAt(mid) === minutes) lo = mid;
        else hi = mid;
      }
      offsets.push({ from: new Date(hi).toISOString(), minutes: now });
      minutes = now;
    }
    before = probe;
  }
  return offsets;
}

function figures(group: Omit<UsageGroup, "key">): UsageTotal {
  return {
    requests: group.requests,
    input_tokens: group.input_tokens,
    output_tokens: group.output_tokens,
    cached_tokens: group.cached_tokens,
    cache_write_tokens: group.cache_write_tokens,
    cost: group.cost_micros === null ? null : unitsOfMicros(group.cost_micros),
    currency: CURRENCY,
    unpriced_requests: group.unpriced_requests,
  };
}

function sum(groups: UsageGroup[]): Omit<UsageGroup, "key"> {
  const total = (k: Exclude<keyof UsageGroup, "key" | "cost_micros">) => groups.reduce((n, g) => n + g[k], 0);
  const priced = groups.filter((g) => g.cost_micros !== null);
  return {
    requests: total("requests"),
    input_tokens: total("input_tokens"),
    output_tokens: total("output_tokens"),
    cached_tokens: total("cached_tokens"),
    cache_write_tokens: total("cache_write_tokens"),
    cost_micros: priced.length > 0 ? priced.reduce((n, g) => n + (g.cost_micros ?? 0), 0) : null,
    unpriced_requests: total("unpriced_requests"),
  };
}

/** A fighter's key is its name; a killed fighter's (the store names live ones only) stays its id. */
async function fighterKeys(groups: UsageGroup[], store: Store): Promise<Map<string, string>> {
  const keys = new Map<string, string>();
  await Promise.all(
    groups.map(async ({ key: id }) => {
      const row = await store.fighters.get(id);
      if (row) keys.set(id, row.name);
    }),
  );
  return keys;
}

/** A refusal's fields: the query parameter it names, as the Arena's schema refusals name theirs. */
function query(parameter: string): { path: string } {
  return { path: `/querystring/${parameter}` };
}

function grouping(by: string | undefined): UsageGrouping {
  if (by === undefined) return "day";
  if ((USAGE_GROUPINGS as readonly string[]).includes(by)) return by as UsageGrouping;
  throw new SparError("VALIDATION_FAILED", `?by must be one of ${USAGE_GROUPINGS.join(", ")}`, query("by"));
}

function named(value: string, parameter: string): string {
  if (value.length === 0 || value.length > 200) {
    throw new SparError("VALIDATION_FAILED", `?${parameter} must be 1 to 200 characters`, query(parameter));
  }
  return value;
}

/** The request's zone (an IANA name), else the machine's (UTC when Intl reports none). */
function timeZone(tz: string | undefined): string {
  if (tz === undefined) return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
  let valid = tz.length > 0 && tz.length <= 100 && !/^[+\-\u2212\s]/.test(tz);
  if (valid) {
    try {
      new Intl.DateTimeFormat("en", { timeZone: tz });
    } catch {
      valid = false;
    }
  }
  if (!valid) {
    throw new SparError(
      "VALIDATION_FAILED",
      `?tz must be an IANA time zone name, e.g. Europe/Lisbon, America/New_York or UTC`,
      query("tz"),
    );
  }
  return tz;
}

/**
 * The range in unix ms, `since` included, `until` not. `since`: `<n>d` (the last n days, today
 * included), a date (from its midnight in the zone) or an instant; default 30d. `until`: a date
 * (through its end), or an instant; default the end of today.
 */
function range(request: UsageReportRequest, zone: string, now: Date): { since: number; until: number } {
  const today = localDate(now.getTime(), zone);
  const since =
    request.since === undefined
      ? midnight(addDays(today, 1 - DEFAULT_DAYS), zone)
      : instant(request.since, "since", zone, today, 0);
  const until =
    request.until === undefined
      ? midnight(addDays(today, 1), zone)
      : instant(request.until, "until", zone, today, 1);
  if (since >= until) {
    throw new SparError("VALIDATION_FAILED", `?since must come before ?until`, query("since"));
  }
  return { since, until };
}

/** A date's midnight, plus `dayAfter` days (1: a date as `until` takes the whole day). */
function instant(text: string, parameter: string, zone: string, today: LocalDate, dayAfter: number): number {
  const days = DAYS.exec(text);
  if (days && parameter === "since") {
    const n = Number(days[1]);
    if (n >= 1 && n <= MAX_DAYS) return midnight(addDays(today, 1 - n), zone);
  }
  const date = DATE.exec(text);
  if (date) {
    const [y, m, d] = [Number(date[1]), Number(date[2]), Number(date[3])];
    const day = new Date(Date.UTC(y, m - 1, d));
    if (y >= 2000 && day.getUTCMonth() === m - 1 && day.getUTCDate() === d) {
      return midnight(addDays({ y, m, d }, dayAfter), zone);
    }
  }
  if (INSTANT.test(text)) {
    const at = Date.parse(text);
    if (Number.isFinite(at) && at >= Date.UTC(2000, 0, 1)) return at;
  }
  const forms =
    parameter === "since" ? `<n>d (1 to ${MAX_DAYS}), a date (YYYY-MM-DD)` : "a date (YYYY-MM-DD)";
  throw new SparError(
    "VALIDATION_FAILED",
    `?${parameter} must be ${forms} or an instant (2026-03-01T12:00:00Z), from 2000 on`,
    query(parameter),
  );
}

interface LocalDate {
  y: number;
  m: number;
  d: number;
}

function addDays(date: LocalDate, days: number): LocalDate {
  const moved = new Date(Date.UTC(date.y, date.m - 1, date.d + days));
  return { y: moved.getUTCFullYear(), m: moved.getUTCMonth() + 1, d: moved.getUTCDate() };
}

function localDate(at: number, zone: string): LocalDate {
  const wall = new Date(at + offsetReader(zone)(at) * 60_000);
  return { y: wall.getUTCFullYear(), m: wall.getUTCMonth() + 1, d: wall.getUTCDate() };
}

/** The instant a date begins in the zone (its offset looked up twice: a change at midnight moves it). */
function midnight(date: LocalDate, zone: string): number {
  const offsetAt = offsetReader(zone);
  const wall = Date.UTC(date.y, date.m - 1, date.d);
  const guess = wall - offsetAt(wall) * 60_000;
  return wall - offsetAt(guess) * 60_000;
}

const readers = new Map<string, (at: number) => number>();

/** The zone's offset east of UTC, in minutes, at an instant (unix ms). */
function offsetReader(zone: string): (at: number) => number {
  let reader = readers.get(zone);
  if (reader) return reader;
  const format = new Intl.DateTimeFormat("en-US", {
    timeZone: zone,
    hourCycle: "h23",
    year: "numeric",
    month: "numeric",
    day: "numeric",
    hour: "numeric",
    minute: "numeric",
    second: "numeric",
  });
  reader = (at) => {
    const part = Object.fromEntries(format.formatToParts(at).map((p) => [p.type, Number(p.value)]));
    const wall = Date.UTC(
      part.year ?? 0,
      (part.month ?? 1) - 1,
      part.day ?? 1,
      part.hour,
      part.minute,
      part.second,
    );
    return Math.round((wall - Math.floor(at / 1000) * 1000) / 60_000);
  };
  if (readers.size > 50) readers.clear();
  readers.set(zone, reader);
  return reader;
}
