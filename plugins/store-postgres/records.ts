/** The small tables: signature nonces and the usage ledger (a row per model call). Each write is one statement, atomic across daemons. */
import type { UsageSummary } from "../../sdk/index.js";
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
    },
  };
}
