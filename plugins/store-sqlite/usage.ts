/** The usage ledger: one row per model call (one per answered message before migration 20), summed when read. */
import type Database from "better-sqlite3-multiple-ciphers";
import type { UsageRecord, UsageSpentFilter, UsageSummary } from "../../sdk/index.js";
import type { StoreData } from "./sync-store.js";

type UsageRow = Omit<UsageRecord, "bout_id" | "turn_id"> & { bout_id: string | null; turn_id: string | null };

export function createUsage(db: Database.Database): StoreData["usage"] {
  const s = {
    record: db.prepare<[UsageRow], void>(
      `INSERT INTO usage (fighter_id, provider, model, at, input_tokens, output_tokens, bout_id, turn_id, origin,
         cached_tokens, cache_write_tokens, cost_micros, currency)
       VALUES (@fighter_id, @provider, @model, @at, @input_tokens, @output_tokens, @bout_id, @turn_id, @origin,
         @cached_tokens, @cache_write_tokens, @cost_micros, @currency)`,
    ),
    summary: db.prepare<[string], UsageSummary>(
      `SELECT provider, model, count(*) AS requests, sum(input_tokens) AS input_tokens,
              sum(output_tokens) AS output_tokens, sum(cached_tokens) AS cached_tokens,
              sum(cache_write_tokens) AS cache_write_tokens, sum(cost_micros) AS cost_micros,
              count(*) - count(cost_micros) AS unpriced_requests
       FROM usage WHERE fighter_id = ? GROUP BY provider, model ORDER BY provider, model`,
    ),
  };
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
  };
}
