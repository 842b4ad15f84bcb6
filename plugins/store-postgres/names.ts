/**
 * Fighter names and Idempotency-Keys are not stored in plaintext (since version 4, schema.ts): each is
 * an HMAC for the lookups that need only equality, and sealed beside it. Version 4 could only make
 * room (SQL has no key), so rows a Spar left plain (one stopped before its open sealed them) are moved
 * over here, once the key is known, in one transaction under the migration lock: the plain value
 * sealed and HMACed, then NULLed.
 */
import type pg from "pg";
import type { Cipher } from "./cipher.js";
import { inTransaction } from "./connection.js";

/** The HMAC purposes: a name is one string whichever table holds it. */
export const NAME_MAC = "fighters.name";
export const IDEMPOTENCY_MAC = "idempotency.key";

interface PlainColumn {
  table: string;
  plain: string;
  mac: string;
  sealed: string;
  purpose: string;
}

const PLAIN: readonly PlainColumn[] = [
  { table: "fighters", plain: "name", mac: "name_mac", sealed: "name_sealed", purpose: NAME_MAC },
  { table: "idempotency", plain: "key", mac: "key_mac", sealed: "key_sealed", purpose: IDEMPOTENCY_MAC },
];

/**
 * Seals and HMACs every plain name and key a Spar left, then NULLs it. Cheap when there is nothing
 * left to do: one `LIMIT 1` probe per column. Returns how many it moved.
 */
export async function sealPlainNames(pool: pg.Pool, schema: string, cipher: Cipher): Promise<number> {
  let moved = 0;
  const pending = await Promise.all(
    PLAIN.map(
      async (c) =>
        (await pool.query(`SELECT 1 FROM ${c.table} WHERE ${c.plain} IS NOT NULL LIMIT 1`)).rowCount ?? 0,
    ),
  );
  if (!pending.some((n) => n > 0)) return 0;
  await inTransaction(pool, async (client) => {
    await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`spar:migrate:${schema}`]);
    for (const c of PLAIN) {
      const rows = (
        await client.query<{ loc: string; value: string }>(
          `SELECT ctid::text AS loc, ${c.plain} AS value FROM ${c.table} WHERE ${c.plain} IS NOT NULL FOR UPDATE`,
        )
      ).rows;
      for (const row of rows) {
        await client.query(
          `UPDATE ${c.table} SET ${c.mac} = $2, ${c.sealed} = $3, ${c.plain} = NULL WHERE ctid = $1::tid`,
          [row.loc, cipher.mac(c.purpose, row.value), cipher.seal(`${c.table}.${c.sealed}`, row.value)],
        );
        moved++;
      }
    }
  });
  return moved;
}
