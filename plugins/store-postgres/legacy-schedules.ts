/**
 * The schedules an older Spar kept in the Store's own table (`schedules`, the message sealed), moved
 * once into moves-schedule's collection, in the order they were added, and the table dropped: at
 * open, after the names are sealed, through `moveLegacy` (legacy.ts).
 */
import type pg from "pg";
import type { Cipher } from "./cipher.js";
import { importDocs } from "./collections.js";
import { moveLegacy } from "./legacy.js";

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

/** Moves the legacy schedules, if the table is still there; how many. */
export function moveLegacySchedules(pool: pg.Pool, schema: string, cipher: Cipher): Promise<number> {
  return moveLegacy(pool, schema, ["schedules"], async (client) => {
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
