/** The usage ledger: one row per model call (one per answered message before migration 20), summed when read. */
import type Database from "better-sqlite3-multiple-ciphers";
import type { UsageGroup, UsageQuery, UsageRecord, UsageSpentFilter, UsageSummary } from "../../sdk/index.js";
import type { StoreData } from "./sync-store.js";

type UsageRow = Omit<UsageRecord, "bout_id" | "turn_id"> & { bout_id: string | null; turn_id: string | null };

const SUMS = `count(*) AS requests, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
  sum(cached_tokens) AS cached_tokens, sum(cache_write_tokens) AS cache_write_tokens,
  sum(cost_micros) AS cost_micros, count(*) - count(cost_micros) AS unpriced_requests`;

export function createUsage(db: Database.Database): StoreData["usage"] {
  const s = {
    record: db.prepare<[UsageRow], void>(
      `INSERT INTO usage (fighter_id, provider, model, at, input_tokens, output_tokens, bout_id, turn_id, origin,
         cached_tokens, cache_write_tokens, cost_micros, currency)
       VALUES (@fighter_id, @provider, @model, @at, @input_tokens, @output_tokens, @bout_id, @turn_id, @origin,
         @cached_tokens, @cache_write_tokens, @cost_micros, @currency)`,
    ),
    summary: db.prepare<[string], UsageSummary>(
      `SELECT provider, model, ${SUMS}
       FROM usage WHERE fighter_id = ? GROUP BY provider, model ORDER BY provider, model`,
    ),
  };
  // A query's text depends on its filters and its zone's offsets: a few shapes, each prepared once.
  const prepared = new Map<string, Database.Statement<unknown[], UsageGroup>>();
  const spent = db.prepare<
    { since: string; fighter: string | null; origin: string | null; prefix: string | null },
    { cost_micros: number | null; tokens: number | null }
  >(
    // usage_at serves the range; a prefix is compared as a substring (no LIKE escaping needed).
    `SELECT sum(cost_micros) AS cost_micros, sum(input_tokens + output_tokens) AS tokens FROM usage
     WHERE at >= @since AND (@fighter IS NULL OR fighter_id = @fighter) AND (@origin IS NULL OR origin = @origin)
       AND (@prefix IS NULL OR substr(origin, 1, length(@prefix)) = @prefix)`,
  );
  return {
    spent(filter: UsageSpentFilter & { since: string }) {
      const row = spent.get({
        since: filter.since,
        fighter: filter.fighter_id ?? null,
        origin: filter.origin ?? null,
        prefix: filter.origin_prefix ?? null,
      });
      return { cost_micros: row?.cost_micros ?? 0, tokens: row?.tokens ?? 0 };
    },
    record(entry) {
      s.record.run({ ...entry, bout_id: entry.bout_id ?? null, turn_id: entry.turn_id ?? null });
    },
    summary: (fighterId) => s.summary.all(fighterId),
    query(query) {
      const { sql, params } = usageQuerySql(query);
      let statement = prepared.get(sql);
      if (!statement) {
        if (prepared.size > 100) prepared.clear();
        statement = db.prepare<unknown[], UsageGroup>(sql);
        prepared.set(sql, statement);
      }
      return statement.all(...params);
    },
  };
}

/**
 * The query's SQL: the `at` range first (usage_at, or usage_fighter_at with a fighter), the other
 * filters on the rows it reaches, then one GROUP BY. A day is the date of `at` shifted by the
 * zone's offset at that instant: a CASE over the offsets' starts (a range of a month or a year
 * crosses at most a few daylight-saving changes).
 */
export function usageQuerySql(query: UsageQuery): { sql: string; params: unknown[] } {
  const params: unknown[] = [query.since, query.until];
  const where = ["at >= ?", "at < ?"];
  if (query.fighter_id !== undefined) {
    where.push("fighter_id = ?");
    params.push(query.fighter_id);
  }
  if (query.origin !== undefined) {
    // originMatches: the origin itself, or one of its kind (a prefix up to a colon).
    where.push("(origin = ? OR substr(origin, 1, ?) = ?)");
    params.push(query.origin, query.origin.length + 1, `${query.origin}:`);
  }
  if (query.provider !== undefined) {
    where.push("provider = ?");
    params.push(query.provider);
  }
  if (query.model !== undefined) {
    where.push("model = ?");
    params.push(query.model);
  }
  const key = keyExpression(query);
  // The key's parameters come first in the text (SELECT), so they are put before the range's.
  return {
    sql: `SELECT ${key.sql} AS key, ${SUMS} FROM usage WHERE ${where.join(" AND ")} GROUP BY 1 ORDER BY 1`,
    params: [...key.params, ...params],
  };
}

function keyExpression(query: UsageQuery): { sql: string; params: unknown[] } {
  switch (query.by) {
    case "model":
      return { sql: "provider || '/' || model", params: [] };
    case "fighter":
      // Unary + keeps the planner off usage_fighter_at: skipping through it fighter by fighter, with a
      // table lookup per call, takes seconds on a 1M-call ledger; the covering usage_at, a fraction.
      return { sql: "+fighter_id", params: [] };
    case "provider":
      return { sql: "provider", params: [] };
    case "origin":
      return {
        sql: "CASE WHEN origin IS NULL THEN 'unknown' WHEN instr(origin, ':') = 0 THEN origin ELSE substr(origin, 1, instr(origin, ':') - 1) END",
        params: [],
      };
    case "origin-exact":
      return { sql: "coalesce(origin, 'unknown')", params: [] };
    case "day": {
      const offsets = query.days ?? [];
      if (offsets.length <= 1) {
        return { sql: "strftime('%Y-%m-%d', at, ?)", params: [modifier(offsets[0]?.minutes ?? 0)] };
      }
      // Newest first: the first start at or before `at` gives its offset; the oldest takes the rest.
      const newest = offsets.slice(1).reverse();
      const whens = newest.map(() => "WHEN at >= ? THEN ?").join(" ");
      return {
        sql: `strftime('%Y-%m-%d', at, CASE ${whens} ELSE ? END)`,
        params: [...newest.flatMap((o) => [o.from, modifier(o.minutes)]), modifier(offsets[0]?.minutes ?? 0)],
      };
    }
  }
}

function modifier(minutes: number): string {
  return `${minutes >= 0 ? "+" : "-"}${Math.abs(minutes)} minutes`;
}
