/**
 * The small tables: signature nonces, usage, fighters' own schedules (the message sealed), and the
 * bout each channel chat talks in. Each write is one statement, atomic across daemons.
 */
import type { ScheduleRecord, UsageSummary } from "../../sdk/index.js";
import { SparError } from "../../sdk/index.js";
import { requireBout, requireLiveFighter, type StoreContext, type StoreData } from "./context.js";

interface ScheduleDbRow {
  id: string;
  fighter_id: string;
  message: Buffer;
  cron: string | null;
  timezone: string | null;
  next_run_at: string;
  created_at: string;
  last_run_at: string | null;
  last_status: string | null;
}

const SCHEDULE_COLUMNS =
  "id, fighter_id, message, cron, timezone, next_run_at, created_at, last_run_at, last_status";

type Records = Pick<StoreData, "nonces" | "usage" | "schedules" | "channelBouts">;

export function createRecords(ctx: StoreContext): Records {
  const { pool, cipher, now } = ctx;
  const toSchedule = (row: ScheduleDbRow): ScheduleRecord => ({
    id: row.id,
    fighter_id: row.fighter_id,
    message: cipher.open("schedules.message", row.message),
    ...(row.cron ? { cron: row.cron } : {}),
    ...(row.timezone ? { timezone: row.timezone } : {}),
    next_run_at: row.next_run_at,
    created_at: row.created_at,
    ...(row.last_run_at ? { last_run_at: row.last_run_at } : {}),
    ...(row.last_status ? { last_status: row.last_status } : {}),
  });

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
      async record(fighterId, entry, at) {
        await pool.query(
          "INSERT INTO usage (fighter_id, provider, model, at, input_tokens, output_tokens) VALUES ($1, $2, $3, $4, $5, $6)",
          [fighterId, entry.provider, entry.model, at, entry.input_tokens, entry.output_tokens],
        );
      },
      summary: async (fighterId) =>
        (
          await pool.query<UsageSummary>(
            `SELECT provider, model, count(*) AS requests, sum(input_tokens)::bigint AS input_tokens,
                    sum(output_tokens)::bigint AS output_tokens
             FROM usage WHERE fighter_id = $1 GROUP BY provider, model ORDER BY provider, model`,
            [fighterId],
          )
        ).rows,
    },
    schedules: {
      async add(record) {
        await requireLiveFighter(pool, record.fighter_id);
        await pool.query(
          `INSERT INTO schedules (${SCHEDULE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
          [
            record.id,
            record.fighter_id,
            cipher.seal("schedules.message", record.message),
            record.cron ?? null,
            record.timezone ?? null,
            record.next_run_at,
            record.created_at,
            record.last_run_at ?? null,
            record.last_status ?? null,
          ],
        );
      },
      list: async (fighterId) =>
        (fighterId === undefined
          ? await pool.query<ScheduleDbRow>(
              `SELECT ${SCHEDULE_COLUMNS} FROM schedules ORDER BY next_run_at, seq`,
            )
          : await pool.query<ScheduleDbRow>(
              `SELECT ${SCHEDULE_COLUMNS} FROM schedules WHERE fighter_id = $1 ORDER BY next_run_at, seq`,
              [fighterId],
            )
        ).rows.map(toSchedule),
      async ran(id, run) {
        if (run.next_run_at === undefined) await pool.query("DELETE FROM schedules WHERE id = $1", [id]);
        else {
          await pool.query(
            "UPDATE schedules SET last_run_at = $1, last_status = $2, next_run_at = $3 WHERE id = $4",
            [run.at, run.status, run.next_run_at, id],
          );
        }
      },
      remove: async (id, fighterId) =>
        ((fighterId === undefined
          ? await pool.query("DELETE FROM schedules WHERE id = $1", [id])
          : await pool.query("DELETE FROM schedules WHERE id = $1 AND fighter_id = $2", [id, fighterId])
        ).rowCount ?? 0) > 0,
    },
    channelBouts: {
      get: async (platform, chat, fighterId) =>
        (
          await pool.query<{ bout_id: string }>(
            "SELECT bout_id FROM channel_bouts WHERE platform = $1 AND chat = $2 AND fighter_id = $3",
            [key(platform, "platform"), key(chat, "chat"), key(fighterId, "fighter_id")],
          )
        ).rows[0]?.bout_id,
      async set(platform, chat, fighterId, boutId) {
        const params = [
          key(platform, "platform"),
          key(chat, "chat"),
          key(fighterId, "fighter_id"),
          boutId,
          now(),
        ];
        await requireBout(pool, boutId);
        await pool.query(
          `INSERT INTO channel_bouts (platform, chat, fighter_id, bout_id, updated_at) VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT (platform, chat, fighter_id) DO UPDATE SET bout_id = excluded.bout_id, updated_at = excluded.updated_at`,
          params,
        );
      },
    },
  };
}

function key(value: string, field: string): string {
  if (typeof value !== "string" || value === "" || value.length > 256) {
    throw new SparError("VALIDATION_FAILED", `${field} must be a string of 1 to 256 characters`);
  }
  return value;
}
