/**
 * Who a fighter is (its creed) and whom it knows (its relationships). Both are keyed by the fighter's
 * name, not its id, so they survive a kill and a respawn under the same name.
 */
import type Database from "better-sqlite3-multiple-ciphers";
import type { CreedDocument, Relationship } from "../../sdk/index.js";
import type { StoreData } from "./sync-store.js";

interface RecordParams {
  fighter_name: string;
  other: string;
  kind: Relationship["kind"];
  note: string;
  at: string;
}

export function createCreeds(db: Database.Database, now: () => string): StoreData["creeds"] {
  const s = {
    get: db.prepare<[string], string>("SELECT document FROM creeds WHERE fighter_name = ?").pluck(),
    put: db.prepare<[string, string, string], void>(
      `INSERT INTO creeds (fighter_name, document, updated_at) VALUES (?, ?, ?)
       ON CONFLICT (fighter_name) DO UPDATE SET document = excluded.document, updated_at = excluded.updated_at`,
    ),
  };
  return {
    get(fighterName) {
      const document = s.get.get(fighterName);
      return document === undefined ? undefined : (JSON.parse(document) as CreedDocument);
    },
    put(fighterName, creed) {
      s.put.run(fighterName, JSON.stringify(creed), now());
    },
  };
}

export function createRelationships(db: Database.Database): StoreData["relationships"] {
  const s = {
    list: db.prepare<[string], Relationship>(
      `SELECT other AS "with", kind, exchanges, last_contact, note FROM relationships
       WHERE fighter_name = ? ORDER BY last_contact DESC, rowid DESC`,
    ),
    // The kind follows the latest exchange; in practice it never changes for one `other`.
    record: db.prepare<[RecordParams], void>(
      `INSERT INTO relationships (fighter_name, other, kind, exchanges, last_contact, note)
       VALUES (@fighter_name, @other, @kind, 1, @at, @note)
       ON CONFLICT (fighter_name, other) DO UPDATE SET exchanges = exchanges + 1,
         kind = excluded.kind, last_contact = excluded.last_contact, note = excluded.note`,
    ),
  };
  return {
    list: (fighterName) => s.list.all(fighterName),
    record(fighterName, other, note, at) {
      s.record.run({ fighter_name: fighterName, other: other.with, kind: other.kind, note, at });
    },
  };
}
