/**
 * The schedules an older Spar kept in the Store's own table (`schedules`, the message sealed), moved
 * once into moves-schedule's collection, in the order they were added, and the table dropped. At
 * open, after the names are sealed, in one transaction under the migration lock; a database without
 * the table (moved already, by this daemon or another) costs one catalog query.
 */
import type pg from "pg";
import type { Cipher } from "./cipher.js";
import { importDocs } from "./collections.js";
import { type Db, inTransaction } from "./connection.js";

interface ScheduleDbRow {
  id: string;
  fighter_id: string;
  message: Buffer;
  cron: string | null;
  timezone: string | null;
  next_run_at: string;
  created_at: string;
  last_run_at: string | null;
  last_status: string | null;
}

/**
 * Whether the table is still there, read from the catalog as of this statement: `to_regclass` may
 * answer from a cache that has not yet seen another daemon's DROP committed while this one waited.
 */
const present = async (db: Db) =>
  ((await db.query("SELECT 1 FROM pg_tables WHERE schemaname = current_schema() AND tablename = 'schedules'"))
    .rowCount ?? 0) > 0;

/** Moves the legacy schedules, if the table is still there; how many. */
export async function moveLegacySchedules(pool: pg.Pool, schema: string, cipher: Cipher): Promise<number> {
  if (!(await present(pool))) return 0;
  return inTransaction(pool, async (client) => {
    await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`spar:migrate:${schema}`]);
    if (!(await present(client))) return 0; // another daemon moved them while this one waited
    const { rows } = await client.query<ScheduleDbRow>(
      `SELECT id, fighter_id, message, cron, timezone, next_run_at, created_at, last_run_at, last_status
       FROM schedules ORDER BY seq`,
    );
    const docs = rows.map(({ message, ...row }) => ({
      key: row.id,
      // The columns that were NULL are absent from the document, as the plugin writes it.
      doc: Object.fromEntries(
        Object.entries({ ...row, message: cipher.open("schedules.message", message) }).filter(
          ([, v]) => v !== null,
        ),
      ),
    }));
    await importDocs(client, cipher, "moves-schedule", "schedules", docs);
    await client.query("DROP TABLE schedules");
    return rows.length;
  });
}
