/**
 * Creeds and relationships were this store's tables until they became the identity-creed plugin's
 * collections (issue 29). A schema an older Spar wrote still has them: at open, once the key is known,
 * their rows are opened (names an older Spar kept plain are taken as they are), handed to the
 * plugin's collections in the order they were written, and the tables dropped, in one transaction
 * under the migration lock. One `to_regclass` probe when there is nothing left to do.
 */
import type pg from "pg";
import type { Cipher } from "./cipher.js";
import { importDocs } from "./collections.js";
import { type Db, inTransaction } from "./connection.js";

type Row = Record<string, unknown>;

/** Each legacy table: how its rows are read, in write order, and what document each becomes. */
const TABLES: { table: "creeds" | "relationships"; select: string; doc(row: Row, c: Cipher): Row }[] = [
  {
    table: "creeds",
    select: "SELECT fighter_name, fighter_sealed, document FROM creeds ORDER BY updated_at, ctid",
    doc(row, c) {
      const document = JSON.parse(c.open("creeds.document", row.document as Buffer)) as Row;
      const { identity, traits, directives, observations, counters, updated_at } = document;
      const fighter = name(row, c, "creeds", "fighter");
      return { fighter, identity, traits, directives, observations, counters, updated_at };
    },
  },
  {
    table: "relationships",
    select: `SELECT fighter_name, fighter_sealed, other AS other_name, other_sealed, kind, exchanges,
               last_contact, note FROM relationships ORDER BY seq`,
    doc(row, c) {
      const fighter = name(row, c, "relationships", "fighter");
      const other = name(row, c, "relationships", "other");
      const { kind, exchanges, last_contact } = row;
      const note = c.open("relationships.note", row.note as Buffer);
      return { id: `${fighter}/${other}`, fighter, with: other, kind, exchanges, last_contact, note };
    },
  },
];

/** A name column: plain when an older Spar left it so, else sealed. */
function name(row: Row, c: Cipher, table: string, column: "fighter" | "other"): string {
  const plain = row[`${column}_name`];
  return typeof plain === "string"
    ? plain
    : c.open(`${table}.${column}_sealed`, row[`${column}_sealed`] as Buffer);
}

async function legacyTables(db: Db): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>(
    "SELECT name FROM unnest(ARRAY['creeds', 'relationships']) AS name WHERE to_regclass(name) IS NOT NULL",
  );
  return rows.map((r) => r.name);
}

/** Moves the legacy creeds and relationships into identity-creed's collections; how many rows it moved. */
export async function importLegacyIdentity(pool: pg.Pool, schema: string, cipher: Cipher): Promise<number> {
  if ((await legacyTables(pool)).length === 0) return 0;
  return inTransaction(pool, async (client) => {
    await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`spar:migrate:${schema}`]);
    // Another daemon may have moved them while this one waited for the lock.
    const left = await legacyTables(client);
    let moved = 0;
    for (const spec of TABLES.filter((t) => left.includes(t.table))) {
      const { rows } = await client.query<Row>(spec.select);
      const key = spec.table === "creeds" ? "fighter" : "id";
      const docs = rows.map((row) => spec.doc(row, cipher)).map((doc) => ({ key: String(doc[key]), doc }));
      await importDocs(client, cipher, "identity-creed", spec.table, docs);
      await client.query(`DROP TABLE ${spec.table}`);
      moved += docs.length;
    }
    return moved;
  });
}
