/**
 * Who a fighter is (its creed, sealed as one JSON document) and whom it knows (its relationships,
 * the note sealed). Both are keyed by the fighter's name, so they survive a kill and a respawn.
 */
import type { CreedDocument, Relationship } from "../../sdk/index.js";
import type { StoreContext, StoreData } from "./context.js";

interface RelationshipDbRow {
  other: string;
  kind: Relationship["kind"];
  exchanges: number;
  last_contact: string;
  note: Buffer;
}

export function createIdentity(ctx: StoreContext): Pick<StoreData, "creeds" | "relationships"> {
  const { pool, cipher, now } = ctx;
  return {
    creeds: {
      async get(fighterName) {
        const row = (
          await pool.query<{ document: Buffer }>("SELECT document FROM creeds WHERE fighter_name = $1", [
            fighterName,
          ])
        ).rows[0];
        return row && (JSON.parse(cipher.open("creeds.document", row.document)) as CreedDocument);
      },
      async put(fighterName, creed) {
        await pool.query(
          `INSERT INTO creeds (fighter_name, document, updated_at) VALUES ($1, $2, $3)
           ON CONFLICT (fighter_name) DO UPDATE SET document = excluded.document, updated_at = excluded.updated_at`,
          [fighterName, cipher.seal("creeds.document", JSON.stringify(creed)), now()],
        );
      },
    },
    relationships: {
      list: async (fighterName) =>
        (
          await pool.query<RelationshipDbRow>(
            `SELECT other, kind, exchanges, last_contact, note FROM relationships
             WHERE fighter_name = $1 ORDER BY last_contact DESC, seq DESC`,
            [fighterName],
          )
        ).rows.map((row) => ({
          with: row.other,
          kind: row.kind,
          exchanges: row.exchanges,
          last_contact: row.last_contact,
          note: cipher.open("relationships.note", row.note),
        })),
      // One statement: two daemons counting an exchange at once both count.
      async record(fighterName, other, note, at) {
        await pool.query(
          `INSERT INTO relationships (fighter_name, other, kind, exchanges, last_contact, note)
           VALUES ($1, $2, $3, 1, $4, $5)
           ON CONFLICT (fighter_name, other) DO UPDATE SET exchanges = relationships.exchanges + 1,
             kind = excluded.kind, last_contact = excluded.last_contact, note = excluded.note`,
          [fighterName, other.with, other.kind, at, cipher.seal("relationships.note", note)],
        );
      },
    },
  };
}
