/**
 * The gorillas' states and runs an older Spar kept in the tables `gorillas` and `gorilla_runs`
 * (schema.ts) move into the scheduler plugins' collections (namespace "gorillas": `gorillas` and
 * `runs`; see lib/gorillas/records.ts): read, each run's sealed output opened, handed to
 * `importDocs` in the order they were written (runs by `seq`, so ties in started_at keep it), then
 * the tables dropped. Once, in one transaction under the migration lock, at open after the key is
 * known; a probe when there is nothing left to move.
 */
import type pg from "pg";
import type { Cipher } from "./cipher.js";
import { importDocs } from "./collections.js";
import { moveLegacy } from "./legacy.js";

const NAMESPACE = "gorillas";
/** Runs read (and held in memory) at a time: an output may be 256 KiB. */
const BATCH = 500;

interface StateRow {
  name: string;
  desired: string;
  changed_at: string;
  last_fire_at: string | null;
}

interface RunRow {
  seq: string;
  id: string;
  gorilla: string;
  trigger: string;
  started_at: string;
  finished_at: string | null;
  outcome: string;
  input_tokens: string;
  output_tokens: string;
  output: Buffer | null;
  error: string | null;
  bout_id: string | null;
}

/** Moves the legacy gorilla tables' rows into the collections and drops the tables; how many rows moved. */
export function importLegacyGorillas(pool: pg.Pool, schema: string, cipher: Cipher): Promise<number> {
  return moveLegacy(pool, schema, ["gorillas", "gorilla_runs"], async (client, tables) => {
    const present = { states: tables.has("gorillas"), runs: tables.has("gorilla_runs") };
    let moved = 0;
    if (present.states) {
      const states = await client.query<StateRow>(
        "SELECT name, desired, changed_at, last_fire_at FROM gorillas ORDER BY changed_at, name",
      );
      await importDocs(
        client,
        cipher,
        NAMESPACE,
        "gorillas",
        states.rows.map((r) => ({
          key: r.name,
          doc: {
            name: r.name,
            desired: r.desired,
            changed_at: r.changed_at,
            ...(r.last_fire_at ? { last_fire_at: r.last_fire_at } : {}),
          },
        })),
      );
      moved += states.rows.length;
      await client.query("DROP TABLE gorillas");
    }
    if (present.runs) {
      for (let after = "0"; ; ) {
        const runs = await client.query<RunRow>(
          `SELECT seq, id, gorilla, trigger, started_at, finished_at, outcome, input_tokens, output_tokens,
             output, error, bout_id FROM gorilla_runs WHERE seq > $1 ORDER BY seq LIMIT ${BATCH}`,
          [after],
        );
        await importDocs(
          client,
          cipher,
          NAMESPACE,
          "runs",
          runs.rows.map((r) => runDoc(r, cipher)),
        );
        moved += runs.rows.length;
        if (runs.rows.length < BATCH) break;
        after = (runs.rows.at(-1) as RunRow).seq;
      }
      await client.query("DROP TABLE gorilla_runs");
    }
    return moved;
  });
}

/** A legacy run as the `runs` collection keeps it: the record, and `running_gorilla` while running. */
function runDoc(r: RunRow, cipher: Cipher): { key: string; doc: Record<string, unknown> } {
  return {
    key: r.id,
    doc: {
      id: r.id,
      gorilla: r.gorilla,
      trigger: r.trigger,
      started_at: r.started_at,
      ...(r.finished_at ? { finished_at: r.finished_at } : {}),
      outcome: r.outcome,
      usage: { input_tokens: Number(r.input_tokens), output_tokens: Number(r.output_tokens) },
      ...(r.output !== null ? { output: cipher.open("gorilla_runs.output", r.output) } : {}),
      ...(r.error !== null ? { error: r.error } : {}),
      ...(r.bout_id ? { bout_id: r.bout_id } : {}),
      ...(r.outcome === "running" ? { running_gorilla: r.gorilla } : {}),
    },
  };
}
