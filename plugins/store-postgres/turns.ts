/**
 * Turns, their messages, and the Idempotency-Key records that point at them. Each write is one
 * transaction; the bout row is locked (FOR UPDATE) before its max(seq) is read, so two daemons
 * appending to one bout never take the same seq, and a turn's own steps go through its lane
 * (context.ts) so they keep call order. An Idempotency-Key is claimed by INSERT … ON CONFLICT DO
 * NOTHING: of two daemons racing with one key, exactly one starts a turn.
 */
import { randomUUID } from "node:crypto";
import type pg from "pg";
import type {
  BoutRecord,
  ChatMessage,
  IdempotencyRecord,
  StoredMessage,
  StoredReply,
  TaintSource,
  TurnRecord,
} from "../../sdk/index.js";
import { SparError, TURN_TAINT_KEPT } from "../../sdk/index.js";
import { inTransaction } from "./connection.js";
import { createLanes, requireLiveFighter, type StoreContext, type StoreData } from "./context.js";
import { BOUT_COLUMNS, type BoutDbRow, toBout } from "./fighters.js";
import { MESSAGE_COLUMNS, messageParams, toMessageRow, toStoredMessage } from "./message-rows.js";
import { IDEMPOTENCY_MAC } from "./names.js";

interface TurnDbRow {
  id: string;
  bout_id: string;
  fighter_id: string;
  status: TurnRecord["status"];
  error_code: string | null;
  error_message: string | null;
  started_at: string;
  finished_at: string | null;
  input_tokens: number;
  output_tokens: number;
  iterations: number;
  model: string | null;
  stop_reason: string | null;
  taint: string | null;
}

interface IdempotencyDbRow {
  request_hash: string;
  fighter_id: string;
  turn_id: string;
  created_at: string;
  reply: Buffer | null;
}

const TURN_COLUMNS =
  "id, bout_id, fighter_id, status, error_code, error_message, started_at, finished_at, input_tokens, output_tokens, iterations, model, stop_reason, taint";
const MESSAGE_VALUES = "($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)";
const REPLY = "idempotency.reply";
/** The key itself is sealed (for a rekey to compute its HMAC again); lookups use the HMAC (names.ts). */
const KEY = "idempotency.key_sealed";

export function createTurns(ctx: StoreContext): Pick<StoreData, "turns" | "idempotency"> {
  const { pool, cipher, now } = ctx;
  const lane = createLanes();

  const turnRow = async (db: pg.PoolClient | pg.Pool, turnId: string, lock = "") =>
    (await db.query<TurnDbRow>(`SELECT ${TURN_COLUMNS} FROM turns WHERE id = $1 ${lock}`, [turnId])).rows[0];

  /** Appends messages to the bout, seq after seq, inside the caller's transaction (bout row locked). */
  async function insert(
    client: pg.PoolClient,
    turn: { id: string; bout_id: string },
    messages: ChatMessage[],
  ): Promise<StoredMessage[]> {
    if (messages.length === 0) return [];
    await client.query("SELECT 1 FROM bouts WHERE id = $1 FOR UPDATE", [turn.bout_id]);
    const createdAt = now();
    const max = await client.query<{ seq: number }>(
      "SELECT coalesce(max(seq), 0) AS seq FROM messages WHERE bout_id = $1",
      [turn.bout_id],
    );
    let seq = max.rows[0]?.seq ?? 0;
    const stored: StoredMessage[] = [];
    for (const message of messages) {
      seq += 1;
      const row = toMessageRow(cipher, message, {
        id: randomUUID(),
        bout_id: turn.bout_id,
        seq,
        created_at: createdAt,
        turn_id: turn.id,
      });
      await client.query(
        `INSERT INTO messages (${MESSAGE_COLUMNS}) VALUES ${MESSAGE_VALUES}`,
        messageParams(row),
      );
      stored.push(toStoredMessage(cipher, row));
    }
    await client.query("UPDATE bouts SET updated_at = $1, message_count = message_count + $2 WHERE id = $3", [
      createdAt,
      stored.length,
      turn.bout_id,
    ]);
    return stored;
  }

  async function runningTurn(
    client: pg.PoolClient,
    turnId: string,
    status: TurnRecord["status"] = "running",
  ): Promise<TurnDbRow> {
    const row = await turnRow(client, turnId, "FOR UPDATE");
    if (!row) throw new SparError("NOT_FOUND", `no turn with id ${turnId}`);
    if (row.status !== status)
      throw new SparError("CONFLICT", `turn ${turnId} is not ${status} (${row.status})`);
    return row;
  }

  /** Moves a turn from `from` to `to` (pause and resume), with its taint so far when given. */
  const move = (
    turnId: string,
    from: TurnRecord["status"],
    to: TurnRecord["status"],
    taint?: readonly TaintSource[],
  ) =>
    lane(turnId, () =>
      inTransaction(pool, async (client) => {
        await runningTurn(client, turnId, from);
        await client.query("UPDATE turns SET status = $2, taint = coalesce($3, taint) WHERE id = $1", [
          turnId,
          to,
          taintJson(taint),
        ]);
        return toTurn((await turnRow(client, turnId)) as TurnDbRow);
      }),
    );

  const boutOf = async (client: pg.PoolClient, boutId: string) =>
    toBout(
      (await client.query<BoutDbRow>(`SELECT ${BOUT_COLUMNS} FROM bouts WHERE id = $1`, [boutId])).rows[0],
    );

  return {
    turns: {
      begin: (start) =>
        inTransaction(pool, async (client) => {
          await requireLiveFighter(client, start.fighter_id);
          const at = now();
          let boutId = start.bout_id;
          if (boutId !== undefined) {
            const owner = await client.query<{ fighter_id: string }>(
              "SELECT fighter_id FROM bouts WHERE id = $1 FOR UPDATE",
              [boutId],
            );
            if (owner.rows[0]?.fighter_id !== start.fighter_id) {
              throw new SparError("BOUT_NOT_FOUND", `fighter ${start.fighter_id} has no bout ${boutId}`);
            }
          } else {
            boutId = randomUUID();
            await client.query(
              "INSERT INTO bouts (id, fighter_id, created_at, updated_at, origin) VALUES ($1, $2, $3, $3, $4)",
              [boutId, start.fighter_id, at, start.origin ?? null],
            );
          }
          const turnId = randomUUID();
          await client.query(
            "INSERT INTO turns (id, bout_id, fighter_id, status, started_at) VALUES ($1, $2, $3, 'running', $4)",
            [turnId, boutId, start.fighter_id, at],
          );
          if (start.idempotency) {
            const claimed = await client.query(
              `INSERT INTO idempotency (key_mac, key_sealed, request_hash, fighter_id, turn_id, created_at)
               VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (key_mac) DO NOTHING RETURNING turn_id`,
              [
                cipher.mac(IDEMPOTENCY_MAC, start.idempotency.key),
                cipher.seal(KEY, start.idempotency.key),
                start.idempotency.request_hash,
                start.fighter_id,
                turnId,
                at,
              ],
            );
            if (claimed.rowCount === 0) {
              throw new SparError(
                "CONFLICT",
                `the Idempotency-Key ${start.idempotency.key} is already in use`,
              );
            }
          }
          await insert(client, { id: turnId, bout_id: boutId }, [start.user]);
          const turn = toTurn((await turnRow(client, turnId)) as TurnDbRow);
          return { turn, bout: (await boutOf(client, boutId)) as BoutRecord, bout_created: !start.bout_id };
        }),
      append: (turnId, messages) =>
        lane(turnId, () =>
          inTransaction(pool, async (client) => insert(client, await runningTurn(client, turnId), messages)),
        ),
      finish: (turnId, end) =>
        lane(turnId, () =>
          inTransaction(pool, async (client) => {
            const turn = await runningTurn(client, turnId);
            await insert(client, turn, end.messages);
            const at = now();
            await client.query(
              `UPDATE turns SET status = $2, error_code = $3, error_message = $4, finished_at = $5,
                 input_tokens = $6, output_tokens = $7, iterations = $8, model = $9, stop_reason = $10,
                 taint = coalesce($11, taint)
               WHERE id = $1`,
              [
                turnId,
                end.status,
                end.error?.code ?? null,
                end.error?.message ?? null,
                at,
                end.usage.input_tokens,
                end.usage.output_tokens,
                end.iterations,
                end.model ?? null,
                end.stop_reason ?? null,
                taintJson(end.taint),
              ],
            );
            if (end.reply) {
              await client.query("UPDATE idempotency SET reply = $1 WHERE turn_id = $2", [
                cipher.seal(REPLY, JSON.stringify(end.reply)),
                turnId,
              ]);
            }
            return toTurn((await turnRow(client, turnId)) as TurnDbRow);
          }),
        ),
      get: async (turnId) => {
        const row = await turnRow(pool, turnId);
        return row ? toTurn(row) : undefined;
      },
      list: async (boutId) =>
        (
          await pool.query<TurnDbRow>(
            `SELECT ${TURN_COLUMNS} FROM turns WHERE bout_id = $1 ORDER BY started_at, seq`,
            [boutId],
          )
        ).rows.map(toTurn),
      unfinished: async (boutId) =>
        (
          await pool.query<TurnDbRow>(
            `SELECT ${TURN_COLUMNS} FROM turns WHERE bout_id = $1 AND status <> 'completed' ORDER BY started_at, seq`,
            [boutId],
          )
        ).rows.map(toTurn),
      abandon: (error, fighterId) =>
        inTransaction(pool, async (client) => {
          const ended = await client.query<{ id: string }>(
            `UPDATE turns SET status = 'failed', error_code = $1, error_message = $2, finished_at = $3
             WHERE status = 'running' AND ($4::text IS NULL OR fighter_id = $4) RETURNING id`,
            [error.code, error.message, now(), fighterId ?? null],
          );
          const reply = JSON.stringify({ ok: false, error } satisfies StoredReply);
          for (const { id } of ended.rows) {
            await client.query("UPDATE idempotency SET reply = $1 WHERE turn_id = $2", [
              cipher.seal(REPLY, reply),
              id,
            ]);
          }
          return ended.rowCount ?? 0;
        }),
      pause: (turnId, taint) => move(turnId, "running", "awaiting_approval", taint),
      resume: (turnId) => move(turnId, "awaiting_approval", "running"),
      awaiting: async () =>
        (
          await pool.query<TurnDbRow>(
            `SELECT ${TURN_COLUMNS} FROM turns WHERE status = 'awaiting_approval' ORDER BY started_at, seq`,
          )
        ).rows.map(toTurn),
    },
    idempotency: {
      async get(key) {
        const row = (
          await pool.query<IdempotencyDbRow>(
            "SELECT request_hash, fighter_id, turn_id, created_at, reply FROM idempotency WHERE key_mac = $1",
            [cipher.mac(IDEMPOTENCY_MAC, key)],
          )
        ).rows[0];
        if (!row) return undefined;
        // Found by the key's HMAC, so the stored key is the one asked for.
        const record: IdempotencyRecord = {
          key,
          request_hash: row.request_hash,
          fighter_id: row.fighter_id,
          turn_id: row.turn_id,
          created_at: row.created_at,
        };
        if (row.reply) record.reply = JSON.parse(cipher.open(REPLY, row.reply)) as StoredReply;
        return record;
      },
      purge: async (before) =>
        (await pool.query("DELETE FROM idempotency WHERE created_at < $1", [before])).rowCount ?? 0,
    },
  };
}

function toTurn(row: TurnDbRow): TurnRecord {
  return {
    id: row.id,
    bout_id: row.bout_id,
    fighter_id: row.fighter_id,
    status: row.status,
    ...(row.error_code ? { error: { code: row.error_code, message: row.error_message ?? "" } } : {}),
    started_at: row.started_at,
    ...(row.finished_at ? { finished_at: row.finished_at } : {}),
    usage: { input_tokens: row.input_tokens, output_tokens: row.output_tokens },
    iterations: row.iterations,
    ...(row.model ? { model: row.model } : {}),
    ...(row.stop_reason ? { stop_reason: row.stop_reason } : {}),
    ...(row.taint ? { taint: JSON.parse(row.taint) as TaintSource[] } : {}),
  };
}

/** The first sources of a turn's taint, as its column keeps them; null when none (the column stays). */
function taintJson(taint: readonly TaintSource[] | undefined): string | null {
  return taint?.length ? JSON.stringify(taint.slice(0, TURN_TAINT_KEPT)) : null;
}
