/**
 * Who a fighter is (its creed, sealed as one JSON document) and whom it knows (its relationships,
 * the note sealed). Both are keyed by the fighter's name, so they survive a kill and a respawn: by
 * its HMAC, with the name sealed beside it (names.ts), as is the other party's name.
 */
import type { CreedDocument, Relationship } from "../../sdk/index.js";
import type { StoreContext, StoreData } from "./context.js";
import { NAME_MAC, OTHER_MAC } from "./names.js";

interface RelationshipDbRow {
  other_sealed: Buffer;
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
          await pool.query<{ document: Buffer }>("SELECT document FROM creeds WHERE fighter_mac = $1", [
            cipher.mac(NAME_MAC, fighterName),
          ])
        ).rows[0];
        return row && (JSON.parse(cipher.open("creeds.document", row.document)) as CreedDocument);
      },
      async put(fighterName, creed) {
        await pool.query(
          `INSERT INTO creeds (fighter_mac, fighter_sealed, document, updated_at) VALUES ($1, $2, $3, $4)
           ON CONFLICT (fighter_mac) DO UPDATE SET document = excluded.document, updated_at = excluded.updated_at`,
          [
            cipher.mac(NAME_MAC, fighterName),
            cipher.seal("creeds.fighter_sealed", fighterName),
            cipher.seal("creeds.document", JSON.stringify(creed)),
            now(),
          ],
        );
      },
    },
    relationships: {
      list: async (fighterName) =>
        (
          await pool.query<RelationshipDbRow>(
            `SELECT other_sealed, kind, exchanges, last_contact, note FROM relationships
             WHERE fighter_mac = $1 ORDER BY last_contact DESC, seq DESC`,
            [cipher.mac(NAME_MAC, fighterName)],
          )
        ).rows.map((row) => ({
          with: cipher.open("relationships.other_sealed", row.other_sealed),
          kind: row.kind,
          exchanges: row.exchanges,
          last_contact: row.last_contact,
          note: cipher.open("relationships.note", row.note),
        })),
      // One statement: two daemons counting an exchange at once both count.
      async record(fighterName, other, note, at) {
        await pool.query(
          `INSERT INTO relationships (fighter_mac, fighter_sealed, other_mac, other_sealed, kind, exchanges,
             last_contact, note)
           VALUES ($1, $2, $3, $4, $5, 1, $6, $7)
           ON CONFLICT (fighter_mac, other_mac) DO UPDATE SET exchanges = relationships.exchanges + 1,
             kind = excluded.kind, last_contact = excluded.last_contact, note = excluded.note`,
          [
            cipher.mac(NAME_MAC, fighterName),
            cipher.seal("relationships.fighter_sealed", fighterName),
            cipher.mac(OTHER_MAC, other.with),
            cipher.seal("relationships.other_sealed", other.with),
            other.kind,
            at,
            cipher.seal("relationships.note", note),
          ],
        );
      },
    },
  };
}
