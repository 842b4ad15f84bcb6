/**
 * For tests only: a store as the previous release (commit bdea67e, the oldest this one upgrades)
 * made it, holding nothing yet, for a test to write that release's rows into before the current
 * store opens it. The schema is read from the upgrade fixtures that release made
 * (test/fixtures/upgrade/), so no test keeps a copy of SQL this release no longer runs.
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type Database from "better-sqlite3-multiple-ciphers";
import pg from "pg";
import { deriveKey, rawKeyLiteral } from "../../plugins/store-sqlite/key.js";
import { openRetained } from "../../plugins/store-sqlite/retain.js";
import { DB_FILE, SALT_FILE } from "../../plugins/store-sqlite/store.js";
import { queryRows } from "./db.js";

/** The upgrade fixtures: a data dir and a PostgreSQL dump the previous release wrote. */
export const UPGRADE_FIXTURES = resolve(import.meta.dirname, "..", "fixtures", "upgrade");

interface SqliteSchema {
  /** Its tables, then its indexes, as sqlite_master holds them. */
  statements: string[];
  /** Its schema_migrations rows. */
  migrations: Record<string, unknown>[];
}

let sqliteSchema: Promise<SqliteSchema> | undefined;

/** The fixture's database read in a copy, so that opening it leaves no file in the fixture. */
function previousSqliteSchema(): Promise<SqliteSchema> {
  sqliteSchema ??= (async () => {
    const copy = mkdtempSync(join(tmpdir(), "spar-previous-release-"));
    try {
      for (const file of [DB_FILE, SALT_FILE, "master.key"]) {
        copyFileSync(join(UPGRADE_FIXTURES, "sqlite", file), join(copy, file));
      }
      const tables = "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY type = 'index', rowid";
      const statements = (await queryRows(copy, tables)) as { sql: string }[];
      const migrations = "SELECT version, name, checksum, applied_at FROM schema_migrations ORDER BY version";
      return {
        statements: statements.map((row) => row.sql),
        migrations: (await queryRows(copy, migrations)) as Record<string, unknown>[],
      };
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  })();
  return sqliteSchema;
}

/**
 * `<home>/spar.db` as the previous release made it (schema version 12), empty, under `salt` and the
 * key of `masterSecret`: returned open, behind the store's back, for the caller to insert rows as
 * that release's code did and close.
 */
export async function previousSqlite(
  home: string,
  masterSecret: Buffer,
  salt = Buffer.alloc(16, 7),
): Promise<Database.Database> {
  const { statements, migrations } = await previousSqliteSchema();
  writeFileSync(join(home, SALT_FILE), salt, { mode: 0o600 });
  const db = openRetained(join(home, DB_FILE), {});
  db.exec("PRAGMA cipher = 'sqlcipher'; PRAGMA legacy = 4");
  db.key(rawKeyLiteral(await deriveKey(masterSecret, salt)));
  for (const sql of statements) db.exec(sql);
  const record = db.prepare(
    "INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (@version, @name, @checksum, @applied_at)",
  );
  for (const row of migrations) record.run(row);
  return db;
}

/**
 * Loads the previous release's store-postgres schema (version 4) into `schema`, which must not exist
 * yet: the fixture's dump, every table but spar_migrations emptied (spar_meta too, so the first open
 * makes a salt and key check for its own secret).
 */
export async function previousPostgres(url: string, schema: string): Promise<void> {
  const dump = readFileSync(join(UPGRADE_FIXTURES, "postgres", "dump.sql"), "utf8");
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(dump.replaceAll("__SPAR_SCHEMA__", schema));
    const { rows } = await client.query<{ name: string }>(
      "SELECT tablename AS name FROM pg_tables WHERE schemaname = $1 AND tablename <> 'spar_migrations'",
      [schema],
    );
    await client.query(`TRUNCATE ${rows.map((row) => `"${schema}"."${row.name}"`).join(", ")}`);
  } finally {
    await client.end();
  }
}
