/**
 * The tables an older Spar kept plugins' records in (the previous release's schema, version 4:
 * memories, knowledge, Creeds and relationships, schedules, gorillas, troops, channel records), moved
 * into the plugins' collections (issue 29). SQL alone cannot move sealed rows (it has no key), so at
 * open, once the key is known, each table below is read in the order its rows were written, its
 * sealed fields opened, and handed to `importDocs` (which seals each document again, bound to its
 * key's HMAC); then the tables are dropped. All in one transaction under the migration lock, so
 * daemons opening the schema together move them once; a probe when there is nothing left to move.
 */
import { randomUUID } from "node:crypto";
import type pg from "pg";
import type { Cipher } from "./cipher.js";
import { importDocs } from "./collections.js";
import { type Db, inTransaction } from "./connection.js";

type Doc = Record<string, unknown>;

/** One older table (or part of one) and the collection its rows become. */
interface LegacyTable {
  /** The table, dropped once every move reading it is done. */
  table: string;
  /** Its rows in the order they were written, each column named as the document's field. */
  select: string;
  to: readonly [namespace: string, collection: string];
  /** The fields read sealed, and the column cipher.ts sealed each under. */
  sealed?: Record<string, string>;
  /** The field the document is keyed by (`id` unless said). */
  key?: string;
  /** What SQL cannot say: fields made from opened ones. */
  shape?: (doc: Doc) => Doc;
}

/** ASCII-only lowercase, as SQLite's lower(): moves-knowledge's folded names and types. "CAFÉ" stays. */
const asciiFold = (text: unknown): string => String(text).replace(/[A-Z]/g, (c) => c.toLowerCase());

/** A channel record's key: the JSON array of what names it, as lib/channels/records.ts writes it. */
const keyed = (doc: Doc, ...fields: string[]): Doc => ({
  id: JSON.stringify(fields.map((f) => doc[f])),
  ...doc,
});

const usage = "json_build_object('input_tokens', input_tokens, 'output_tokens', output_tokens) AS usage";

export const LEGACY_TABLES: readonly LegacyTable[] = [
  {
    table: "memories",
    select: "SELECT id, fighter_id, key, value, score0, scored_at, created_at FROM memories ORDER BY seq",
    to: ["moves-memory", "memories"],
    sealed: { key: "memories.key", value: "memories.value" },
  },
  {
    table: "kg_entities",
    select: "SELECT id, fighter_id, name, type, created_at FROM kg_entities ORDER BY seq",
    to: ["moves-knowledge", "entities"],
    sealed: { name: "kg_entities.name", type: "kg_entities.type" },
    shape: (d) => ({ ...d, name_folded: asciiFold(d.name), type_folded: asciiFold(d.type) }),
  },
  {
    // A relation gets a key of its own (it had none) and holds its endpoints' names.
    table: "kg_relations",
    select: `SELECT r.fighter_id, r.from_id, r.to_id, f.name AS "from", t.name AS "to", r.type, r.created_at
      FROM kg_relations r JOIN kg_entities f ON f.id = r.from_id JOIN kg_entities t ON t.id = r.to_id
      ORDER BY r.seq`,
    to: ["moves-knowledge", "relations"],
    sealed: { from: "kg_entities.name", to: "kg_entities.name", type: "kg_relations.type" },
    shape: (d) => ({ id: randomUUID(), ...d, type_folded: asciiFold(d.type) }),
  },
  {
    // A name is plain where a Spar before version 4's move left it so, else sealed.
    table: "creeds",
    select: "SELECT fighter_name, fighter_sealed, document FROM creeds ORDER BY updated_at, ctid",
    to: ["identity-creed", "creeds"],
    sealed: { fighter_sealed: "creeds.fighter_sealed", document: "creeds.document" },
    key: "fighter",
    shape: ({ fighter_name, fighter_sealed, document }) => {
      const { identity, traits, directives, observations, counters, updated_at } = JSON.parse(
        String(document),
      );
      const fighter = fighter_name ?? fighter_sealed;
      return { fighter, identity, traits, directives, observations, counters, updated_at };
    },
  },
  {
    table: "relationships",
    select: `SELECT fighter_name, fighter_sealed, other, other_sealed, kind, exchanges, last_contact, note
      FROM relationships ORDER BY seq`,
    to: ["identity-creed", "relationships"],
    sealed: {
      fighter_sealed: "relationships.fighter_sealed",
      other_sealed: "relationships.other_sealed",
      note: "relationships.note",
    },
    shape: ({ fighter_name, fighter_sealed, other, other_sealed, ...d }) => {
      const [fighter, peer] = [fighter_name ?? fighter_sealed, other ?? other_sealed];
      return { id: `${fighter}/${peer}`, fighter, with: peer, ...d };
    },
  },
  {
    table: "schedules",
    select: `SELECT id, fighter_id, message, cron, timezone, next_run_at, created_at, last_run_at, last_status
      FROM schedules ORDER BY seq`,
    to: ["moves-schedule", "schedules"],
    sealed: { message: "schedules.message" },
  },
  {
    table: "gorillas",
    select: "SELECT name, desired, changed_at, last_fire_at FROM gorillas ORDER BY changed_at, name",
    to: ["gorillas", "gorillas"],
    key: "name",
  },
  {
    // running_gorilla only while running: the unique that keeps one running run per gorilla.
    table: "gorilla_runs",
    select: `SELECT id, gorilla, trigger, started_at, finished_at, outcome, ${usage}, output, error, bout_id,
        CASE WHEN outcome = 'running' THEN gorilla END AS running_gorilla
      FROM gorilla_runs ORDER BY seq`,
    to: ["gorillas", "runs"],
    sealed: { output: "gorilla_runs.output" },
  },
  {
    table: "troops",
    select:
      "SELECT id, name, leader, members, strategy, rotation, created_at FROM troops ORDER BY created_at, id",
    to: ["troops-local", "troops"],
  },
  {
    // What the fighters produced was one sealed JSON body; a task without steps has [].
    table: "troop_tasks",
    select: `SELECT id, troop_id, task, strategy, status, body, partial, ${usage}, created_at, started_at,
        finished_at, CASE WHEN error_code IS NOT NULL
          THEN json_build_object('code', error_code, 'message', coalesce(error_message, '')) END AS error
      FROM troop_tasks ORDER BY seq`,
    to: ["troops-local", "tasks"],
    sealed: { task: "troop_tasks.task", body: "troop_tasks.body" },
    shape: ({ body, ...d }) => {
      const { result, steps, votes, reason } = JSON.parse(String(body));
      return { ...d, result, steps: steps ?? [], votes, reason };
    },
  },
  {
    table: "channel_bouts",
    select: `SELECT platform, chat, fighter_id, bout_id, updated_at FROM channel_bouts
      WHERE platform <> 'openai' ORDER BY updated_at`,
    to: ["channels", "bouts"],
    shape: (d) => keyed(d, "platform", "chat", "fighter_id"),
  },
  {
    // The OpenAI users' bouts are the Arena's.
    table: "channel_bouts",
    select: `SELECT chat AS "user", fighter_id, bout_id, updated_at FROM channel_bouts
      WHERE platform = 'openai' ORDER BY updated_at`,
    to: ["arena-http", "openai_bouts"],
    shape: (d) => keyed(d, "user", "fighter_id"),
  },
  {
    table: "channel_deliveries",
    select: "SELECT platform, delivery_id, seen_at FROM channel_deliveries ORDER BY seen_at",
    to: ["channels", "deliveries"],
    shape: (d) => keyed(d, "platform", "delivery_id"),
  },
  {
    table: "channel_chats",
    select: "SELECT platform, chat, fighter_id, first_at, last_at FROM channel_chats ORDER BY first_at",
    to: ["channels", "chats"],
    shape: (d) => keyed(d, "platform", "chat", "fighter_id"),
  },
];

/** Rows read, opened and imported at a time: a run's output or a task's body may be megabytes. */
const BATCH = 200;

/**
 * Moves every legacy table still there into its collection and drops the tables; how many rows
 * each table gave (nothing when none is left).
 */
export async function moveLegacyTables(
  pool: pg.Pool,
  schema: string,
  cipher: Cipher,
): Promise<Record<string, number>> {
  const names = [...new Set(LEGACY_TABLES.map((t) => t.table))];
  if ((await presentTables(pool, names)).length === 0) return {};
  return inTransaction(pool, async (client) => {
    await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`spar:migrate:${schema}`]);
    // Another daemon may have moved them while this one waited for the lock.
    const present = await presentTables(client, names);
    const moved: Record<string, number> = {};
    for (const table of LEGACY_TABLES.filter((t) => present.includes(t.table))) {
      moved[table.table] = (moved[table.table] ?? 0) + (await moveTable(client, cipher, table));
    }
    if (present.length > 0) await client.query(`DROP TABLE ${present.join(", ")}`);
    return moved;
  });
}

/** One table's rows into its collection, through a cursor: memory holds a batch at a time. */
async function moveTable(client: Db, cipher: Cipher, table: LegacyTable): Promise<number> {
  await client.query(`DECLARE legacy_rows NO SCROLL CURSOR FOR ${table.select}`);
  let moved = 0;
  for (;;) {
    const { rows } = await client.query<Doc>(`FETCH ${BATCH} FROM legacy_rows`);
    const docs = rows.map((row) => documentOf(table, row, cipher));
    await importDocs(
      client,
      cipher,
      ...table.to,
      docs.map((doc) => ({ key: String(doc[table.key ?? "id"]), doc })),
    );
    moved += rows.length;
    if (rows.length < BATCH) break;
  }
  await client.query("CLOSE legacy_rows");
  return moved;
}

/** A row as its collection keeps it: sealed fields opened, shaped, and absent where it had nothing. */
function documentOf(table: LegacyTable, row: Doc, cipher: Cipher): Doc {
  const opened = { ...row };
  for (const [field, column] of Object.entries(table.sealed ?? {})) {
    const value = row[field];
    if (value !== null) opened[field] = cipher.open(column, value as Buffer);
  }
  const doc = table.shape ? table.shape(opened) : opened;
  return Object.fromEntries(Object.entries(doc).filter(([, v]) => v !== null && v !== undefined));
}

/**
 * The tables of `names` still there. Read from pg_class under the statement's own snapshot:
 * to_regclass answers from the connection's catalog cache, which can still hold a table another
 * daemon dropped while this one waited for the lock.
 */
async function presentTables(db: Db, names: readonly string[]): Promise<string[]> {
  const found = await db.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relname = ANY($1)`,
    [names],
  );
  return found.rows.map((r) => r.name);
}
