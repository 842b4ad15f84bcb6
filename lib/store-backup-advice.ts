/**
 * What `spar backup`, `spar restore` and `POST /api/v1/store/backup` say when the active store keeps
 * its data somewhere other than `<data dir>/spar.db`: they snapshot the SQLite store only. The
 * PostgreSQL store is backed up with PostgreSQL's own tools, and the answer says exactly how.
 */
import { SparError } from "../sdk/errors.js";

/** The store whose database `spar backup` and `spar restore` handle. */
export const SNAPSHOT_STORE = "store-sqlite";

/** What the backup and restore answers of store-postgres name: its schema, its URL's variable, the file. */
export interface PostgresBackupFacts {
  /** The PostgreSQL schema the store's tables live in (`[store.postgres] schema`). */
  schema: string;
  /** The variable holding the connection URL (`[store.postgres] url_env`). */
  url_env: string;
  /** The file the user named, when there was one. */
  file?: string;
}

/**
 * BACKUP_UNSUPPORTED for `spar backup` / the backup route on the PostgreSQL store, with the pg_dump
 * command to run instead.
 *
 * @example
 * throw postgresBackupRefusal({ schema: "spar", url_env: "SPAR_DATABASE_URL", file: "/backups/spar.dump" });
 */
export function postgresBackupRefusal(facts: PostgresBackupFacts): SparError {
  const file = facts.file ?? "spar.dump";
  return new SparError(
    "BACKUP_UNSUPPORTED",
    "the PostgreSQL store (store-postgres) is backed up with pg_dump, not by Spar: run " +
      `pg_dump --format=custom --schema=${facts.schema} --file=${file} "$${facts.url_env}" ` +
      "(any time, daemons running or not). Encrypted columns stay encrypted in the dump and the key " +
      "derivation salt travels with it (in spar_meta), so it restores with pg_restore under the same " +
      "master secret: keep master.key (or SPAR_MASTER_KEY) with your backups, separately",
    { store: "store-postgres", command: "pg_dump" },
  );
}

/** BACKUP_UNSUPPORTED for `spar restore` on the PostgreSQL store, with the pg_restore command. */
export function postgresRestoreRefusal(facts: PostgresBackupFacts): SparError {
  const file = facts.file ?? "spar.dump";
  return new SparError(
    "BACKUP_UNSUPPORTED",
    "the PostgreSQL store (store-postgres) is restored with pg_restore, not by Spar: stop every daemon " +
      `using the schema ${facts.schema}, then run pg_restore --clean --if-exists ` +
      `--dbname="$${facts.url_env}" ${file} (a dump made by pg_dump --format=custom --schema=${facts.schema}). ` +
      "It opens with the master secret that was current when the dump was made",
    { store: "store-postgres", command: "pg_restore" },
  );
}

/**
 * Refuses `spar backup` / `spar restore` (`what`) on any store but the SQLite one: the PostgreSQL
 * store with its own commands, another store with a plain word. Returns nothing for the SQLite store.
 */
export function refuseUnlessSnapshotStore(
  store: string,
  sections: Record<string, Record<string, unknown>>,
  what: "backup" | "restore",
  file: string,
): void {
  if (store === SNAPSHOT_STORE) return;
  if (store === "store-postgres") {
    const section = sections["store.postgres"] ?? {};
    const facts = {
      schema: typeof section.schema === "string" ? section.schema : "spar",
      url_env: typeof section.url_env === "string" ? section.url_env : "SPAR_DATABASE_URL",
      file,
    };
    throw what === "backup" ? postgresBackupRefusal(facts) : postgresRestoreRefusal(facts);
  }
  throw new SparError(
    "BACKUP_UNSUPPORTED",
    `spar ${what} handles the SQLite store's database only, and the active store is ${store} ` +
      "([plugins] store): back it up and restore it with the tools of the storage it uses",
    { store },
  );
}
