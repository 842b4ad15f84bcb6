/**
 * Numbered, checksummed migrations. A released migration's SQL is frozen: its sha256 is recorded in
 * spar_migrations when applied, and a mismatch on a later open stops the store (the code and the
 * database disagree about the schema). They run in one transaction under a transaction-level
 * advisory lock on the schema's name, so daemons starting at once against one database migrate it
 * once: the others wait, then find nothing left to do.
 */
import { createHash } from "node:crypto";
import type pg from "pg";
import { SparError } from "../../sdk/index.js";
import { inTransaction } from "./connection.js";
import { BOUT_ORIGINS, CHANNEL_DELIVERIES, COLLECTIONS, SCHEMA_V1, SEALED_NAMES } from "./schema.js";

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  { version: 1, name: "every-table", sql: SCHEMA_V1 },
  { version: 2, name: "bout origins", sql: BOUT_ORIGINS },
  { version: 3, name: "channel deliveries and chats", sql: CHANNEL_DELIVERIES },
  { version: 4, name: "sealed names and idempotency keys", sql: SEALED_NAMES },
  { version: 5, name: "plugin collections", sql: COLLECTIONS },
];

/** The newest schema version this code knows. */
export const SCHEMA_VERSION = Math.max(...MIGRATIONS.map((m) => m.version));

/** The checksum recorded for a migration: sha256 (hex) of its SQL text, exactly as written. */
export function checksum(sql: string): string {
  return createHash("sha256").update(sql, "utf8").digest("hex");
}

interface AppliedRow {
  version: number;
  name: string;
  checksum: string;
}

/**
 * Creates the schema if needed, checks the applied migrations against `migrations` and applies the
 * pending ones, all in one transaction (a failure leaves the schema as it was). Returns the versions
 * it applied.
 */
export async function migrate(
  pool: pg.Pool,
  schema: string,
  migrations: readonly Migration[] = MIGRATIONS,
): Promise<number[]> {
  return inTransaction(pool, async (client) => {
    // hashtext() is PostgreSQL's own 32-bit hash: one lock per schema name, shared by every node.
    await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`spar:migrate:${schema}`]);
    // The schema name was checked as an identifier (connection.ts): safe to quote into DDL.
    await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    // The pool's search_path names the schema; said again here since it may have only just been made.
    await client.query(`SET LOCAL search_path TO "${schema}"`);
    await client.query(`CREATE TABLE IF NOT EXISTS spar_migrations (
  version INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  checksum TEXT NOT NULL,
  applied_at TEXT NOT NULL
)`);
    const applied = (
      await client.query<AppliedRow>("SELECT version, name, checksum FROM spar_migrations ORDER BY version")
    ).rows;
    checkApplied(applied, migrations, schema);
    const done = new Set(applied.map((row) => row.version));
    const pending = migrations.filter((m) => !done.has(m.version)).sort((a, b) => a.version - b.version);
    for (const m of pending) {
      await client.query(m.sql);
      await client.query(
        "INSERT INTO spar_migrations (version, name, checksum, applied_at) VALUES ($1, $2, $3, $4)",
        [m.version, m.name, checksum(m.sql), new Date().toISOString()],
      );
    }
    return pending.map((m) => m.version);
  });
}

/** STORE_FAILED for a database newer than the code, a migration unknown here, or a changed one. */
export function checkApplied(applied: AppliedRow[], migrations: readonly Migration[], schema: string): void {
  const known = new Map(migrations.map((m) => [m.version, m]));
  const newest = Math.max(0, ...migrations.map((m) => m.version));
  for (const row of applied) {
    if (row.version > newest) {
      throw new SparError(
        "STORE_FAILED",
        `the PostgreSQL schema ${schema} was written by a newer Spar (schema version ${row.version}, this one ` +
          `knows up to ${newest}); upgrade Spar to open it`,
      );
    }
    const migration = known.get(row.version);
    if (!migration) {
      throw new SparError(
        "STORE_FAILED",
        `the PostgreSQL schema ${schema} records migration ${row.version} (${row.name}), unknown here`,
      );
    }
    if (checksum(migration.sql) !== row.checksum) {
      throw new SparError(
        "STORE_FAILED",
        `migration ${row.version} (${migration.name}) applied to the PostgreSQL schema ${schema} differs from ` +
          "this Spar's: the recorded checksum does not match its SQL",
        { migration: row.version },
      );
    }
  }
}

/** The applied migrations, checked again (the integrity check): throws as `migrate` would. */
export async function verifyMigrations(
  db: pg.Pool,
  schema: string,
  migrations: readonly Migration[] = MIGRATIONS,
): Promise<void> {
  const applied = (
    await db.query<AppliedRow>("SELECT version, name, checksum FROM spar_migrations ORDER BY version")
  ).rows;
  checkApplied(applied, migrations, schema);
}
