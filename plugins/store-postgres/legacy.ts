/**
 * What every move of an older schema's tables into plugins' collections shares (issue 29): SQL alone
 * cannot move sealed rows (it has no key), so at open, once the key is known, each `legacy-*.ts`
 * opens its tables' rows, hands them to `importDocs` in the order they were written and drops the
 * tables, in one transaction under the migration lock, so daemons opening together move them once.
 */
import type pg from "pg";
import { type Db, inTransaction } from "./connection.js";

/**
 * The tables of `names` still there. Read from pg_class under the statement's own snapshot:
 * to_regclass answers from the connection's catalog cache, which can still hold a table another
 * daemon dropped while this one waited for the lock.
 */
export async function presentTables(db: Db, names: readonly string[]): Promise<Set<string>> {
  const found = await db.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relname = ANY($1)`,
    [names],
  );
  return new Set(found.rows.map((r) => r.name));
}

/**
 * Runs `move` with the tables of `names` still there, in one transaction under the migration lock;
 * nothing (one probe) when none is. Returns what `move` returns, or 0.
 */
export async function moveLegacy(
  pool: pg.Pool,
  schema: string,
  names: readonly string[],
  move: (client: Db, tables: Set<string>) => Promise<number>,
): Promise<number> {
  if ((await presentTables(pool, names)).size === 0) return 0;
  return inTransaction(pool, async (client) => {
    await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`spar:migrate:${schema}`]);
    // Another daemon may have moved them while this one waited for the lock.
    const tables = await presentTables(client, names);
    return tables.size === 0 ? 0 : move(client, tables);
  });
}
