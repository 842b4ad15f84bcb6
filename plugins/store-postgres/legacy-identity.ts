/**
 * Creeds and relationships were this store's tables until they became the identity-creed plugin's
 * collections (issue 29). A schema an older Spar wrote still has them: at open, once the key is known,
 * their rows are opened (names an older Spar kept plain are taken as they are), handed to the
 * plugin's collections in the order they were written, and the tables dropped (legacy.ts).
 */
import type pg from "pg";
import type { Cipher } from "./cipher.js";
import { importDocs } from "./collections.js";
import { moveLegacy } from "./legacy.js";

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

/** Moves the legacy creeds and relationships into identity-creed's collections; how many rows it moved. */
export function moveLegacyIdentity(pool: pg.Pool, schema: string, cipher: Cipher): Promise<number> {
  return moveLegacy(pool, schema, ["creeds", "relationships"], async (client, tables) => {
    let moved = 0;
    for (const spec of TABLES.filter((t) => tables.has(t.table))) {
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
