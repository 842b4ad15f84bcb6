/**
 * Troops and their tasks as a Spar before troops-local's collections kept them: this schema's
 * `troops` and `troop_tasks` tables (a task's text and body sealed, its state in plain columns).
 * Moved at open, once the key is known, into troops-local's `troops` and `tasks` collections as the
 * documents the plugin writes, in the order they were written, then the tables are dropped: one
 * transaction under the migration lock, so daemons opening at once move them once.
 */
import type pg from "pg";
import type { Cipher } from "./cipher.js";
import { importDocs } from "./collections.js";
import { moveLegacy } from "./legacy.js";

const NAMESPACE = "troops-local";
/** Tasks read and imported at a time: their bodies may be megabytes each. */
const BATCH = 200;

interface TroopRow {
  id: string;
  name: string;
  leader: string;
  members: string[];
  strategy: string;
  rotation: number;
  created_at: string;
}

interface TaskRow {
  seq: number;
  id: string;
  troop_id: string;
  task: Buffer;
  strategy: string;
  status: string;
  body: Buffer;
  error_code: string | null;
  error_message: string | null;
  partial: boolean;
  input_tokens: number;
  output_tokens: number;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
}

/** Moves the legacy troops and tasks into troops-local's collections; how many rows. Cheap when there are none. */
export function moveLegacyTroops(pool: pg.Pool, schema: string, cipher: Cipher): Promise<number> {
  return moveLegacy(pool, schema, ["troops"], async (client) => {
    const troops = (
      await client.query<TroopRow>(
        "SELECT id, name, leader, members, strategy, rotation, created_at FROM troops ORDER BY created_at, id",
      )
    ).rows;
    await importDocs(
      client,
      cipher,
      NAMESPACE,
      "troops",
      troops.map((t) => ({
        key: t.id,
        doc: {
          id: t.id,
          name: t.name,
          leader: t.leader,
          members: t.members,
          strategy: t.strategy,
          rotation: t.rotation,
          created_at: t.created_at,
        },
      })),
    );
    let moved = troops.length;
    for (let after = 0; ; ) {
      const rows = (
        await client.query<TaskRow>(
          `SELECT seq, id, troop_id, task, strategy, status, body, error_code, error_message, partial,
             input_tokens, output_tokens, created_at, started_at, finished_at
           FROM troop_tasks WHERE seq > $1 ORDER BY seq LIMIT $2`,
          [after, BATCH],
        )
      ).rows;
      if (rows.length === 0) break;
      await importDocs(
        client,
        cipher,
        NAMESPACE,
        "tasks",
        rows.map((row) => ({ key: row.id, doc: taskDoc(row, cipher) })),
      );
      moved += rows.length;
      after = (rows[rows.length - 1] as TaskRow).seq;
    }
    await client.query("DROP TABLE troop_tasks");
    await client.query("DROP TABLE troops");
    return moved;
  });
}

/** A task as troops-local's `tasks` collection holds it: absent, not null, where it has nothing. */
function taskDoc(row: TaskRow, cipher: Cipher): Record<string, unknown> {
  const body = JSON.parse(cipher.open("troop_tasks.body", row.body)) as Record<string, unknown>;
  const doc: Record<string, unknown> = {
    id: row.id,
    troop_id: row.troop_id,
    task: cipher.open("troop_tasks.task", row.task),
    strategy: row.strategy,
    status: row.status,
    result: body.result,
    steps: body.steps ?? [],
    votes: body.votes,
    reason: body.reason,
    error: row.error_code === null ? null : { code: row.error_code, message: row.error_message ?? "" },
    partial: row.partial,
    usage: { input_tokens: row.input_tokens, output_tokens: row.output_tokens },
    created_at: row.created_at,
    started_at: row.started_at,
    finished_at: row.finished_at,
  };
  for (const [field, value] of Object.entries(doc))
    if (value === null || value === undefined) delete doc[field];
  return doc;
}
