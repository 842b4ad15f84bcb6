/**
 * Fighters, bouts, messages (listing and compaction) and bout summaries. A fighter's manifest holds
 * its system prompt, written by a user, so it is sealed like a message.
 */
import type { BoutRecord, BoutSummary, FighterManifest, FighterRow } from "../../sdk/index.js";
import { SparError } from "../../sdk/index.js";
import { inTransaction, isUniqueViolation } from "./connection.js";
import { requireBout, type StoreContext, type StoreData } from "./context.js";
import { MESSAGE_COLUMNS, type MessageDbRow, toStoredMessage } from "./message-rows.js";
import { NAME_MAC } from "./names.js";

interface FighterDbRow {
  id: string;
  name_sealed: Buffer;
  manifest: Buffer;
  created_at: string;
}

/** The name is sealed, and found by its HMAC (names.ts): no fighter name is stored in plaintext. */
const FIGHTER_COLUMNS = "id, name_sealed, manifest, created_at";
export const BOUT_COLUMNS = "id, fighter_id, created_at, updated_at, message_count, origin";

export type BoutDbRow = Omit<BoutRecord, "origin"> & { origin: string | null };

/** A bout as the contract has it: `origin` only on a bout a fighter or a troop started. */
export function toBout(row: BoutDbRow): BoutRecord;
export function toBout(row: BoutDbRow | undefined): BoutRecord | undefined;
export function toBout(row: BoutDbRow | undefined): BoutRecord | undefined {
  if (!row) return undefined;
  const { origin, ...bout } = row;
  return origin === null ? bout : { ...bout, origin };
}

type Core = Pick<StoreData, "fighters" | "bouts" | "messages" | "summaries">;

export function createCore(ctx: StoreContext): Core {
  const { pool, cipher, now } = ctx;
  const toFighter = (row: FighterDbRow): FighterRow => ({
    id: row.id,
    name: cipher.open("fighters.name_sealed", row.name_sealed),
    manifest: JSON.parse(cipher.open("fighters.manifest", row.manifest)) as FighterManifest,
    created_at: row.created_at,
  });
  const fighterWhere = async (where: string, value: string | Buffer) =>
    (
      await pool.query<FighterDbRow>(
        `SELECT ${FIGHTER_COLUMNS} FROM fighters WHERE ${where} AND killed_at IS NULL`,
        [value],
      )
    ).rows.map(toFighter)[0];
  const messages = async (sql: string, params: unknown[]) =>
    (await pool.query<MessageDbRow>(sql, params)).rows.map((row) => toStoredMessage(cipher, row));

  return {
    fighters: {
      async insert(row) {
        try {
          await pool.query(
            `INSERT INTO fighters (${FIGHTER_COLUMNS}, name_mac) VALUES ($1, $2, $3, $4, $5)`,
            [
              row.id,
              cipher.seal("fighters.name_sealed", row.name),
              cipher.seal("fighters.manifest", JSON.stringify(row.manifest)),
              row.created_at,
              cipher.mac(NAME_MAC, row.name),
            ],
          );
        } catch (err) {
          if (isUniqueViolation(err)) {
            throw new SparError(
              "CONFLICT",
              `A fighter named ${row.name} (or with id ${row.id}) already exists`,
            );
          }
          throw err;
        }
      },
      list: async () =>
        (
          await pool.query<FighterDbRow>(
            `SELECT ${FIGHTER_COLUMNS} FROM fighters WHERE killed_at IS NULL ORDER BY created_at, seq`,
          )
        ).rows.map(toFighter),
      get: (id) => fighterWhere("id = $1", id),
      getByName: (name) => fighterWhere("name_mac = $1", cipher.mac(NAME_MAC, name)),
      kill: async (id) =>
        ((
          await pool.query("UPDATE fighters SET killed_at = $1 WHERE id = $2 AND killed_at IS NULL", [
            now(),
            id,
          ])
        ).rowCount ?? 0) > 0,
    },
    bouts: {
      get: async (id) =>
        toBout(
          (await pool.query<BoutDbRow>(`SELECT ${BOUT_COLUMNS} FROM bouts WHERE id = $1`, [id])).rows[0],
        ),
      // Newest = most recently updated, in both, so latest(f) is always the first of list(f) with its origin.
      latest: async (fighterId, origin) =>
        toBout(
          (
            await pool.query<BoutDbRow>(
              `SELECT ${BOUT_COLUMNS} FROM bouts WHERE fighter_id = $1 AND origin IS NOT DISTINCT FROM $2
               ORDER BY updated_at DESC, seq DESC LIMIT 1`,
              [fighterId, origin ?? null],
            )
          ).rows[0],
        ),
      list: async (fighterId) =>
        (
          await pool.query<BoutDbRow>(
            `SELECT ${BOUT_COLUMNS} FROM bouts WHERE fighter_id = $1 ORDER BY updated_at DESC, seq DESC`,
            [fighterId],
          )
        ).rows.map((row) => toBout(row)),
    },
    messages: {
      list: (boutId) =>
        messages(`SELECT ${MESSAGE_COLUMNS}, compacted FROM messages WHERE bout_id = $1 ORDER BY seq`, [
          boutId,
        ]),
      // A range of the (bout_id, seq) index: only the tail is read, however long the bout.
      tail: (boutId) =>
        messages(
          `SELECT ${MESSAGE_COLUMNS}, compacted FROM messages
           WHERE bout_id = $1 AND seq > (SELECT compacted_through FROM bouts WHERE id = $1) AND NOT compacted
           ORDER BY seq`,
          [boutId],
        ),
      // Truncation (no summary) leaves an earlier summary as it was: it still covers what it covered.
      compact: (boutId, throughSeq, summary) =>
        inTransaction(pool, async (client) => {
          await requireBout(client, boutId);
          const marked = await client.query(
            "UPDATE messages SET compacted = TRUE WHERE bout_id = $1 AND seq <= $2 AND NOT compacted",
            [boutId, throughSeq],
          );
          await client.query(
            "UPDATE bouts SET compacted_through = greatest(compacted_through, $1) WHERE id = $2",
            [throughSeq, boutId],
          );
          if (summary !== undefined) {
            await client.query(
              `INSERT INTO bout_summaries (bout_id, summary, through_seq, updated_at) VALUES ($1, $2, $3, $4)
               ON CONFLICT (bout_id) DO UPDATE SET summary = excluded.summary,
                 through_seq = excluded.through_seq, updated_at = excluded.updated_at`,
              [boutId, cipher.seal("bout_summaries.summary", summary), throughSeq, now()],
            );
          }
          return marked.rowCount ?? 0;
        }),
    },
    summaries: {
      async get(boutId) {
        const row = (
          await pool.query<Omit<BoutSummary, "summary"> & { summary: Buffer }>(
            "SELECT bout_id, summary, through_seq, updated_at FROM bout_summaries WHERE bout_id = $1",
            [boutId],
          )
        ).rows[0];
        return row && { ...row, summary: cipher.open("bout_summaries.summary", row.summary) };
      },
    },
  };
}
