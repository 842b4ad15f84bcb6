/**
 * Creeds and relationships were the Store's tables until they became the identity-creed plugin's
 * collections (issue 29). A schema an older Spar wrote still has them: at open, once the key is known,
 * their rows are opened (names an older Spar kept plain are taken as they are), handed to the
 * plugin's collections in the order they were written, and the tables dropped, in one transaction
 * under the migration lock. One `to_regclass` probe when there is nothing left to do.
 */
import type pg from "pg";
import type { Cipher } from "./cipher.js";
import { importDocs } from "./collections.js";
import { inTransaction } from "./connection.js";

const NAMESPACE = "identity-creed";

interface CreedRow {
  fighter_name: string | null;
  fighter_sealed: Buffer | null;
  document: Buffer;
}

interface RelationshipRow {
  fighter_name: string | null;
  fighter_sealed: Buffer | null;
  other: string | null;
  other_sealed: Buffer | null;
  kind: string;
  exchanges: number;
  last_contact: string;
  note: Buffer;
}

async function legacyTables(
  db: Pick<pg.Pool, "query">,
): Promise<{ creeds: boolean; relationships: boolean }> {
  const { rows } = await db.query<{ creeds: boolean; relationships: boolean }>(
    `SELECT to_regclass('creeds') IS NOT NULL AS creeds, to_regclass('relationships') IS NOT NULL AS relationships`,
  );
  return rows[0] ?? { creeds: false, relationships: false };
}

/** Moves the legacy creeds and relationships into identity-creed's collections; how many rows it moved. */
export async function importLegacyIdentity(pool: pg.Pool, schema: string, cipher: Cipher): Promise<number> {
  const probe = await legacyTables(pool);
  if (!probe.creeds && !probe.relationships) return 0;
  return inTransaction(pool, async (client) => {
    await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`spar:migrate:${schema}`]);
    // Another daemon may have moved them while this one waited for the lock.
    const left = await legacyTables(client);
    let moved = 0;
    if (left.creeds) {
      const { rows } = await client.query<CreedRow>(
        "SELECT fighter_name, fighter_sealed, document FROM creeds ORDER BY updated_at, ctid",
      );
      const docs = rows.map((row) => {
        const fighter =
          row.fighter_name ?? cipher.open("creeds.fighter_sealed", row.fighter_sealed as Buffer);
        const document = JSON.parse(cipher.open("creeds.document", row.document)) as Record<string, unknown>;
        const { identity, traits, directives, observations, counters, updated_at } = document;
        return {
          key: fighter,
          doc: { fighter, identity, traits, directives, observations, counters, updated_at },
        };
      });
      await importDocs(client, cipher, NAMESPACE, "creeds", docs);
      await client.query("DROP TABLE creeds");
      moved += docs.length;
    }
    if (left.relationships) {
      const { rows } = await client.query<RelationshipRow>(
        `SELECT fighter_name, fighter_sealed, other, other_sealed, kind, exchanges, last_contact, note
         FROM relationships ORDER BY seq`,
      );
      const docs = rows.map((row) => {
        const fighter =
          row.fighter_name ?? cipher.open("relationships.fighter_sealed", row.fighter_sealed as Buffer);
        const other = row.other ?? cipher.open("relationships.other_sealed", row.other_sealed as Buffer);
        const id = `${fighter}/${other}`;
        const note = cipher.open("relationships.note", row.note);
        const { kind, exchanges, last_contact } = row;
        return { key: id, doc: { id, fighter, with: other, kind, exchanges, last_contact, note } };
      });
      await importDocs(client, cipher, NAMESPACE, "relationships", docs);
      await client.query("DROP TABLE relationships");
      moved += docs.length;
    }
    return moved;
  });
}
