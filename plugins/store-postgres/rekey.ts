/**
 * Master key rotation: every sealed column is opened with the old key and sealed again with a key
 * derived from the new secret and a new salt, the HMAC lookup columns recomputed, and the salt and
 * key check replaced, all in one transaction. An interruption leaves the old key working (nothing
 * committed) or the new one (everything did), never neither; store.ts then opens with master.key or
 * master.key.next, whichever works.
 */
import type pg from "pg";
import { type Cipher, createCipher, deriveKey, KEY_CHECK_COLUMN, KEY_CHECK_TEXT, newSalt } from "./cipher.js";
import { resealCollections } from "./collection-rows.js";
import { inTransaction } from "./connection.js";
import { CHECK_ROW, SALT_ROW } from "./keys.js";
import { IDEMPOTENCY_MAC, NAME_MAC } from "./names.js";

type Row = Record<string, unknown>;

interface SealedTable {
  table: string;
  /** The sealed columns (nullable ones may be null). */
  sealed: string[];
  /** The HMAC columns, from the row's plaintext. */
  macs?: (row: Row, cipher: Cipher) => Record<string, Buffer>;
}

const str = (value: unknown) => String(value);

/** Every column cipher.ts sealed, by table (keep in step with schema.ts). */
export const SEALED: readonly SealedTable[] = [
  {
    table: "fighters",
    sealed: ["manifest", "name_sealed"],
    macs: (row, c) => ({ name_mac: c.mac(NAME_MAC, str(row.name_sealed)) }),
  },
  { table: "messages", sealed: ["content", "tool_calls"] },
  { table: "bout_summaries", sealed: ["summary"] },
  {
    table: "idempotency",
    sealed: ["reply", "key_sealed"],
    macs: (row, c) => ({ key_mac: c.mac(IDEMPOTENCY_MAC, str(row.key_sealed)) }),
  },
];

/**
 * Re-encrypts the schema under `masterSecret` and returns the new cipher (the caller swaps it in and
 * wipes the old one). Takes the migration lock, so no daemon migrates meanwhile.
 */
export async function rekeySchema(
  pool: pg.Pool,
  schema: string,
  old: Cipher,
  masterSecret: Buffer,
): Promise<Cipher> {
  const salt = newSalt();
  const key = await deriveKey(masterSecret, salt);
  const next = createCipher(key);
  key.fill(0);
  try {
    await inTransaction(pool, async (client) => {
      await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`spar:migrate:${schema}`]);
      for (const spec of SEALED) await reseal(client, spec, old, next);
      await resealCollections(client, old, next);
      await client.query("UPDATE spar_meta SET value = $2 WHERE key = $1", [SALT_ROW, salt]);
      await client.query("UPDATE spar_meta SET value = $2 WHERE key = $1", [
        CHECK_ROW,
        next.seal(KEY_CHECK_COLUMN, KEY_CHECK_TEXT),
      ]);
    });
    return next;
  } catch (err) {
    next.wipe();
    throw err;
  }
}

async function reseal(client: pg.PoolClient, spec: SealedTable, old: Cipher, next: Cipher): Promise<void> {
  const columns = spec.sealed;
  // ctid locates each row for its UPDATE; the rows are locked, so it cannot move meanwhile.
  const rows = (
    await client.query<Row>(`SELECT ctid::text AS loc, ${columns.join(", ")} FROM ${spec.table} FOR UPDATE`)
  ).rows;
  for (const row of rows) {
    const plain: Row = { ...row };
    const values: Record<string, Buffer | null> = {};
    for (const column of spec.sealed) {
      const sealed = row[column];
      if (sealed === null) {
        values[column] = null;
        continue;
      }
      const text = old.open(`${spec.table}.${column}`, sealed as Buffer);
      plain[column] = text;
      values[column] = next.seal(`${spec.table}.${column}`, text);
    }
    Object.assign(values, spec.macs?.(plain, next) ?? {});
    const names = Object.keys(values);
    const sets = names.map((name, i) => `${name} = $${i + 2}`).join(", ");
    await client.query(`UPDATE ${spec.table} SET ${sets} WHERE ctid = $1::tid`, [
      row.loc,
      ...names.map((n) => values[n]),
    ]);
  }
}
