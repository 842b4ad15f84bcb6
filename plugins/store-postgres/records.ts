/** The small tables: signature nonces and the usage ledger (a row per model call). Each write is one statement, atomic across daemons. */
import type { UsageGroup, UsageQuery, UsageSummary } from "../../sdk/index.js";
import type { StoreContext, StoreData } from "./context.js";

type Records = Pick<StoreData, "nonces" | "usage">;

export function createRecords(ctx: StoreContext): Records {
  const { pool } = ctx;
  return {
    nonces: {
      async claim(keyId, nonce, expiresAt, nowSeconds) {
        // One statement decides: a new nonce, or one whose earlier claim has expired, is claimed;
        // of two daemons claiming one nonce at once exactly one gets a row back.
        const claimed = await pool.query(
          `INSERT INTO nonces (key_id, nonce, expires_at) VALUES ($1, $2, $3)
           ON CONFLICT (key_id, nonce) DO UPDATE SET expires_at = excluded.expires_at
           WHERE nonces.expires_at < $4
           RETURNING 1`,
          [keyId, nonce, expiresAt, nowSeconds],
        );
        await pool.query("DELETE FROM nonces WHERE expires_at < $1", [nowSeconds]);
        return claimed.rowCount === 1;
      },
    },
    usage: {
      async record(entry) {
        await pool.query(
          `INSERT INTO usage (fighter_id, provider, model, at, input_tokens, output_tokens, bout_id, turn_id,
             origin, cached_tokens, cache_write_tokens, cost_micros, currency)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
          [
            entry.fighter_id,
            entry.provider,
            entry.model,
            entry.at,
            entry.input_tokens,
            entry.output_tokens,
            entry.bout_id ?? null,
            entry.turn_id ?? null,
            entry.origin,
            entry.cached_tokens,
            entry.cache_write_tokens,
            entry.cost_micros,
            entry.currency,
          ],
        );
      },
      async spent(filter) {
        const { rows } = await pool.query<{ cost_micros: string | null; tokens: string | null }>(
          `SELECT sum(cost_micros)::bigint AS cost_micros, sum(input_tokens + output_tokens)::bigint AS tokens
           FROM usage WHERE at >= $1 AND ($2::text IS NULL OR fighter_id = $2) AND ($3::text IS NULL OR origin = $3)
             AND ($4::text IS NULL OR left(origin, length($4)) = $4)`,
          [filter.since, filter.fighter_id ?? null, filter.origin ?? null, filter.origin_prefix ?? null],
        );
        return { cost_micros: Number(rows[0]?.cost_micros ?? 0), tokens: Number(rows[0]?.tokens ?? 0) };
      },
      summary: async (fighterId) =>
        (
          await pool.query<UsageSummary>(
            `SELECT provider, model, count(*)::int AS requests, sum(input_tokens)::bigint AS input_tokens,
                    sum(output_tokens)::bigint AS output_tokens, sum(cached_tokens)::bigint AS cached_tokens,
                    sum(cache_write_tokens)::bigint AS cache_write_tokens, sum(cost_micros)::bigint AS cost_micros,
                    (count(*) - count(cost_micros))::int AS unpriced_requests
             FROM usage WHERE fighter_id = $1 GROUP BY provider, model ORDER BY provider, model`,
            [fighterId],
          )
        ).rows,
      async query(query) {
        const { sql, params } = usageQuerySql(query);
        return (await pool.query<UsageGroup>(sql, params)).rows;
      },
    },
  };
}

/**
 * A usage query's SQL: the `at` range first (usage_at, or usage_fighter_at with a fighter), the other
 * filters on the rows it reaches, then one GROUP BY. A day is the date of `at` shifted by the zone's
 * offset at that instant (a CASE over the offsets' starts, as store-sqlite does, so both stores
 * turn a day at the same instant whatever the server's own time-zone data).
 */
export function usageQuerySql(query: UsageQuery): { sql: string; params: unknown[] } {
  const params: unknown[] = [];
  const p = (value: unknown) => {
    params.push(value);
    return `$${params.length}`;
  };
  const where = [`at >= ${p(query.since)}`, `at < ${p(query.until)}`];
  if (query.fighter_id !== undefined) where.push(`fighter_id = ${p(query.fighter_id)}`);
  if (query.origin !== undefined) {
    // originMatches: the origin itself, or one of its kind (a prefix up to a colon).
    where.push(
      `(origin = ${p(query.origin)} OR left(origin, ${p(query.origin.length + 1)}) = ${p(`${query.origin}:`)})`,
    );
  }
  if (query.provider !== undefined) where.push(`provider = ${p(query.provider)}`);
  if (query.model !== undefined) where.push(`model = ${p(query.model)}`);
  return {
    sql: `SELECT * FROM (SELECT ${keyExpression(query, p)} AS key, count(*)::int AS requests,
            sum(input_tokens)::bigint AS input_tokens, sum(output_tokens)::bigint AS output_tokens,
            sum(cached_tokens)::bigint AS cached_tokens, sum(cache_write_tokens)::bigint AS cache_write_tokens,
            sum(cost_micros)::bigint AS cost_micros, (count(*) - count(cost_micros))::int AS unpriced_requests
          FROM usage WHERE ${where.join(" AND ")} GROUP BY 1) AS groups
          ORDER BY key COLLATE "C"`,
    params,
  };
}

function keyExpression(query: UsageQuery, p: (value: unknown) => string): string {
  switch (query.by) {
    case "model":
      return "provider || '/' || model";
    case "fighter":
      return "fighter_id";
    case "provider":
      return "provider";
    case "origin":
      return "coalesce(split_part(origin, ':', 1), 'unknown')";
    case "origin-exact":
      return "coalesce(origin, 'unknown')";
    case "day": {
      const offsets = query.days ?? [];
      // Newest first: the first start at or before `at` gives its offset; the oldest takes the rest.
      const newest = offsets.slice(1).reverse();
      const whens = newest.map((o) => `WHEN at >= ${p(o.from)} THEN ${p(o.minutes)}::int`).join(" ");
      const oldest = `${p(offsets[0]?.minutes ?? 0)}::int`;
      const minutes = newest.length > 0 ? `CASE ${whens} ELSE ${oldest} END` : oldest;
      // A timestamp without zone takes the text's wall time and drops its "Z": UTC, shifted.
      return `to_char(at::timestamp + make_interval(mins => ${minutes}), 'YYYY-MM-DD')`;
    }
  }
}
