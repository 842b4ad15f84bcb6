/**
 * Numbered, checksummed migrations. A released migration's SQL is frozen: its sha256 is recorded in
 * spar_migrations when applied, and a mismatch on a later open stops the store (the code and the
 * database disagree about the schema). They run in one transaction under a transaction-level
 * advisory lock on the schema's name, so daemons starting at once against one database migrate it
 * once: the others wait, then find nothing left to do.
 *
 * A new schema is made in one step from BASELINE, the current schema, and recorded as every version
 * it holds. A schema of the previous release (version 4, commit bdea67e) or later is upgraded in
 * place; an older one is refused (STORE_TOO_OLD). Versions 1 to 4 are kept as their recorded
 * checksums only, so an applied history is still checked.
 */
import { createHash } from "node:crypto";
import type pg from "pg";
import { SparError } from "../../sdk/index.js";
import { inTransaction } from "./connection.js";
import { BASELINE, COLLECTIONS } from "./schema.js";

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** A migration as a schema records it. */
export interface Recorded {
  version: number;
  name: string;
  checksum: string;
}

/** The oldest schema this release upgrades: the previous release's. */
export const OLDEST_UPGRADED = 4;

const retired = (version: number, name: string, checksum: string): Recorded => ({ version, name, checksum });

/** Versions 1 to 4, no longer run (a schema without them is refused): what they recorded. */
export const RETIRED: readonly Recorded[] = [
  retired(1, "every-table", "11888306647933c91aeb30fa0230bf86d83099e4aa7104bcad72e3bcf418aaf2"),
  retired(2, "bout origins", "563f060d2c6d5b190de5defae17572877d3219db2c5f618d8633e5f5afca9aa9"),
  retired(
    3,
    "channel deliveries and chats",
    "22b4165c3ed81bb70a8dcf5a95c71de09e971343a44c9bd2df26d07234b8af52",
  ),
  retired(
    4,
    "sealed names and idempotency keys",
    "7aa26e8f8583ce3bb7f1fc98f1670a3015bbe2bb493f35ceaa000e74fa736922",
  ),
];

/** The migrations a schema of the previous release or later may still need. */
export const MIGRATIONS: readonly Migration[] = [
  { version: 5, name: "plugin collections", sql: COLLECTIONS },
  {
    version: 6,
    name: "turns awaiting approval, and their taint",
    sql: `
-- A turn may wait for an approval (awaiting_approval: not finished, resumed after a restart) and
-- records the untrusted content it took in. The constraints keep the names PostgreSQL gave them.
ALTER TABLE turns
  DROP CONSTRAINT turns_status_check,
  DROP CONSTRAINT turns_check,
  ADD COLUMN taint TEXT,
  ADD CONSTRAINT turns_status_check
    CHECK (status IN ('running', 'awaiting_approval', 'completed', 'failed', 'cancelled')),
  ADD CONSTRAINT turns_check CHECK ((status IN ('running', 'awaiting_approval')) = (finished_at IS NULL));
CREATE INDEX turns_awaiting ON turns(started_at) WHERE status = 'awaiting_approval';
`,
  },
  {
    version: 7,
    name: "usage ledger per model call",
    sql: `
-- The usage ledger gets a row per model call: its bout, turn and origin, the prompt-cache tokens the
-- provider reported, and its cost in micro-units of the currency (NULL: the model is unpriced, as
-- every row written before this was). usage_at serves the time ranges.
ALTER TABLE usage ADD COLUMN bout_id TEXT;
ALTER TABLE usage ADD COLUMN turn_id TEXT;
ALTER TABLE usage ADD COLUMN origin TEXT;
ALTER TABLE usage ADD COLUMN cached_tokens BIGINT NOT NULL DEFAULT 0 CHECK (cached_tokens >= 0);
ALTER TABLE usage ADD COLUMN cache_write_tokens BIGINT NOT NULL DEFAULT 0 CHECK (cache_write_tokens >= 0);
ALTER TABLE usage ADD COLUMN cost_micros BIGINT CHECK (cost_micros IS NULL OR cost_micros >= 0);
ALTER TABLE usage ADD COLUMN currency TEXT;
CREATE INDEX usage_at ON usage(at);
`,
  },
  {
    version: 8,
    name: "usage ledger by fighter and time",
    sql: `
-- GET /api/v1/usage and spar usage sum the calls of a time range (1M-row ledger: bench/usage-query.mjs).
-- usage_at becomes covering: it includes every column the sums and groups read, so a range can be
-- read by an index-only scan, in time order. usage_fighter_at reaches one fighter's calls without
-- walking every fighter's in the range.
DROP INDEX usage_at;
CREATE INDEX usage_at ON usage(at) INCLUDE (fighter_id, provider, model, origin, input_tokens, output_tokens, cached_tokens, cache_write_tokens, cost_micros);
CREATE INDEX usage_fighter_at ON usage(fighter_id, at);
`,
  },
  {
    version: 9,
    name: "collection word index",
    sql: `
-- Collection.rank (collection-words.ts): each row of a collection that searches fields holds its
-- words as keyed tokens (HMACs, never the words) in a tsvector, found through a GIN index;
-- collection_schemas.search records the fields they were made from (NULL: none, or rows from before
-- this, which the collection's next ensure indexes).
ALTER TABLE collection_rows ADD COLUMN words tsvector;
CREATE INDEX collection_rows_words ON collection_rows USING gin (words);
ALTER TABLE collection_schemas ADD COLUMN search TEXT;
`,
  },
];

/** The version the baseline is equal to: migrations after it still run on a new schema. */
export const BASELINE_VERSION = 8;

/** The newest schema version this code knows. */
export const SCHEMA_VERSION = Math.max(...MIGRATIONS.map((m) => m.version));

/** The checksum recorded for a migration: sha256 (hex) of its SQL text, exactly as written. */
export function checksum(sql: string): string {
  return createHash("sha256").update(sql, "utf8").digest("hex");
}

/** Every version `migrations` bring this code to, as a schema records them. */
function historyOf(migrations: readonly Migration[]): Recorded[] {
  return [
    ...RETIRED,
    ...migrations.map((m) => ({ version: m.version, name: m.name, checksum: checksum(m.sql) })),
  ];
}

/**
 * Creates the schema if needed (a new one from the baseline), checks the applied migrations and
 * applies the pending ones, all in one transaction (a failure leaves the schema as it was). Returns
 * the versions it recorded.
 */
export async function migrate(
  pool: pg.Pool,
  schema: string,
  migrations: readonly Migration[] = MIGRATIONS,
): Promise<number[]> {
  const history = historyOf(migrations);
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
      await client.query<Recorded>("SELECT version, name, checksum FROM spar_migrations ORDER BY version")
    ).rows;
    const record = (m: Recorded) =>
      client.query(
        "INSERT INTO spar_migrations (version, name, checksum, applied_at) VALUES ($1, $2, $3, $4)",
        [m.version, m.name, m.checksum, new Date().toISOString()],
      );
    let done = applied;
    if (applied.length === 0) {
      await client.query(BASELINE);
      done = history.filter((m) => m.version <= BASELINE_VERSION);
      for (const m of done) await record(m);
    } else checkApplied(applied, history, schema);
    const pending = migrations
      .filter((m) => !done.some((row) => row.version === m.version))
      .sort((a, b) => a.version - b.version);
    for (const m of pending) {
      await client.query(m.sql);
      await record({ version: m.version, name: m.name, checksum: checksum(m.sql) });
    }
    return [...(applied.length === 0 ? done : []), ...pending].map((m) => m.version);
  });
}

/**
 * STORE_FAILED for a schema newer than the code, a migration unknown here or a changed one;
 * STORE_TOO_OLD for one older than the previous release.
 */
export function checkApplied(applied: Recorded[], history: Recorded[], schema: string): void {
  const known = new Map(history.map((m) => [m.version, m]));
  const newest = Math.max(...history.map((m) => m.version));
  const found = Math.max(...applied.map((row) => row.version));
  if (found > newest) {
    throw new SparError(
      "STORE_FAILED",
      `the PostgreSQL schema ${schema} was written by a newer Spar (schema version ${found}, this one ` +
        `knows up to ${newest}); upgrade Spar to open it`,
    );
  }
  if (found < OLDEST_UPGRADED) {
    throw new SparError(
      "STORE_TOO_OLD",
      `the PostgreSQL schema ${schema} has schema version ${found}, older than this Spar upgrades (version ` +
        `${OLDEST_UPGRADED} and later). Open it once with an earlier Spar (the previous release, commit ` +
        `bdea67e, upgrades it to version ${OLDEST_UPGRADED}), then with this one`,
      { schema_version: found, oldest_upgraded: OLDEST_UPGRADED },
    );
  }
  for (const row of applied) {
    const migration = known.get(row.version);
    if (!migration) {
      throw new SparError(
        "STORE_FAILED",
        `the PostgreSQL schema ${schema} records migration ${row.version} (${row.name}), unknown here`,
      );
    }
    if (migration.checksum !== row.checksum) {
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
    await db.query<Recorded>("SELECT version, name, checksum FROM spar_migrations ORDER BY version")
  ).rows;
  checkApplied(applied, historyOf(migrations), schema);
}
