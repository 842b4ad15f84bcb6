/**
 * Numbered, checksummed schema migrations. A released migration's SQL is frozen: its sha256 is recorded
 * when applied, and a mismatch on a later open means the code and the database disagree about the
 * schema, which is safer to stop on than to guess about. Add a new migration instead of editing one.
 *
 * A new database is made in one step from BASELINE, the current schema, and recorded as every version
 * it holds. A database of the previous release (version 12, commit bdea67e) or later is upgraded in
 * place by the migrations after it; an older one is refused (STORE_TOO_OLD). Migrations 1 to 12 are
 * kept as their recorded checksums only, so an applied history is still checked.
 */
import { createHash } from "node:crypto";
import type Database from "better-sqlite3-multiple-ciphers";
import { SparError } from "../../sdk/index.js";
import { BASELINE, BASELINE_VERSION, COLLECTION_TABLES, COLLECTION_WORDS, TURNS_TABLE } from "./baseline.js";

export { BASELINE_VERSION };

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** A migration as a database records it. */
export interface Recorded {
  version: number;
  name: string;
  checksum: string;
}

/** The oldest schema this release upgrades: the previous release's. */
export const OLDEST_UPGRADED = 12;

const retired = (version: number, name: string, checksum: string): Recorded => ({ version, name, checksum });

/** Migrations 1 to 12, no longer run (a database without them is refused): what they recorded. */
export const RETIRED: readonly Recorded[] = [
  retired(
    1,
    "fighters-bouts-messages-memories",
    "1df85f0b0acb104b6f6b4ed95cef078b267b109903cc769618e0dc8d5a943c55",
  ),
  retired(
    2,
    "decay-summaries-creeds-relationships-knowledge",
    "1ae3eaa352f8bf4d862e9913d14269d37c2cbcbb89afc964f0788936801098fd",
  ),
  retired(3, "usage", "7053011e25e8422cac2f8f7baea623986ff09df073cd00499200d767736ea825"),
  retired(4, "nonces", "9fd716acb463c2b8235e1e7c516672aede75d735576c53f1946ab4ac18c11f09"),
  retired(5, "turns-idempotency", "9df41fe93f1e5387e66c2f6689e2236df496f867356d8d992f1123e3b6817e32"),
  retired(6, "bout-counters", "f99877f43d88ce3b4a57469d321d2fa86a13b667eb6587a362f8884b6bde8d13"),
  retired(7, "schedules", "c6c5554331498ec5103344658507ecd159d619037810a5705adddd29677f36db"),
  retired(8, "gorillas", "29da9473587ccbad234f005005aac7a0594eb15e11546efe18a8160609faa283"),
  retired(9, "troops", "5dbcd30167287b1abe22d6ddaac30bce896ac7a76a5fc67765f620db608ad3bb"),
  retired(10, "channel bouts", "5c3af4fe6d7772b0bd7247e19d490f65267be5373bba16b41ea55751a33048d0"),
  retired(11, "bout origins", "ec9b703b576539a7e1491bf59148efe776cdb103cb1493823d5ddac5b02c49d6"),
  retired(
    12,
    "channel deliveries and chats",
    "8d9a38ad1cf2e35b907f43d5e863ca56eb429956582e7c9822fa591ddbf48a6d",
  ),
];

export const MIGRATIONS: readonly Migration[] = [
  { version: 13, name: "plugin collections", sql: COLLECTION_TABLES },
  {
    version: 14,
    name: "memories and knowledge to their plugins' collections",
    sql: `
-- Memories (moves-memory) and the knowledge graph (moves-knowledge) become their plugins' own
-- collections (plugin.json), in the order they were written. An entity's identity is its name and
-- type under lower() (ASCII), as their unique index had it; a relation keeps its endpoints' names,
-- and gets a key of its own (it had only a rowid). The legacy tables go, their indexes with them.
INSERT INTO collection_rows (namespace, collection, key, doc)
SELECT 'moves-memory', 'memories', id, json_object(
  'id', id, 'fighter_id', fighter_id, 'key', key, 'value', value, 'score0', score0,
  'scored_at', coalesce(scored_at, accessed_at, created_at), 'created_at', created_at)
FROM memories ORDER BY rowid;

INSERT INTO collection_rows (namespace, collection, key, doc)
SELECT 'moves-knowledge', 'entities', id, json_object(
  'id', id, 'fighter_id', fighter_id, 'name', name, 'type', type,
  'name_folded', lower(name), 'type_folded', lower(type), 'created_at', created_at)
FROM kg_entities ORDER BY rowid;

-- MATERIALIZED: each relation's random key is drawn once, for its key and its document alike.
WITH moved AS MATERIALIZED (
  SELECT lower(hex(randomblob(16))) AS id, r.rowid AS written, r.fighter_id, r.from_id, r.to_id,
    f.name AS from_name, t.name AS to_name, r.type, r.created_at
  FROM kg_relations r JOIN kg_entities f ON f.id = r.from_id JOIN kg_entities t ON t.id = r.to_id
)
INSERT INTO collection_rows (namespace, collection, key, doc)
SELECT 'moves-knowledge', 'relations', id, json_object(
  'id', id, 'fighter_id', fighter_id, 'from_id', from_id, 'to_id', to_id, 'from', from_name,
  'to', to_name, 'type', type, 'type_folded', lower(type), 'created_at', created_at)
FROM moved ORDER BY written;

DROP TABLE memories;
DROP TABLE kg_relations;
DROP TABLE kg_entities;
`,
  },
  {
    version: 15,
    name: "creeds and relationships to identity-creed's collections",
    sql: `
-- Creeds and relationships are the identity-creed plugin's own data now (its plugin.json), kept in
-- collection_rows in the order they were written; the tables go.
INSERT INTO collection_rows (namespace, collection, key, doc)
SELECT 'identity-creed', 'creeds', fighter_name, json_object(
  'fighter', fighter_name,
  'identity', json_extract(document, '$.identity'),
  'traits', json(json_extract(document, '$.traits')),
  'directives', json(json_extract(document, '$.directives')),
  'observations', json(json_extract(document, '$.observations')),
  'counters', json(json_extract(document, '$.counters')),
  'updated_at', json_extract(document, '$.updated_at'))
FROM creeds ORDER BY rowid;
DROP TABLE creeds;

-- Keyed by "<fighter>/<other>": a fighter's name never holds a "/".
INSERT INTO collection_rows (namespace, collection, key, doc)
SELECT 'identity-creed', 'relationships', fighter_name || '/' || other, json_object(
  'id', fighter_name || '/' || other,
  'fighter', fighter_name,
  'with', other,
  'kind', kind,
  'exchanges', exchanges,
  'last_contact', last_contact,
  'note', note)
FROM relationships ORDER BY rowid;
DROP TABLE relationships;
`,
  },
  {
    version: 16,
    name: "schedules to moves-schedule",
    sql: `
-- The schedules leave the Store for moves-schedule's own collection: a document per schedule, in
-- the order they were added (schedules due at once keep it), without the columns that were NULL.
INSERT INTO collection_rows (namespace, collection, key, doc)
SELECT 'moves-schedule', 'schedules', id, json_patch('{}', json_object(
  'id', id, 'fighter_id', fighter_id, 'message', message, 'cron', cron, 'timezone', timezone,
  'next_run_at', next_run_at, 'created_at', created_at, 'last_run_at', last_run_at,
  'last_status', last_status))
FROM schedules ORDER BY rowid;
DROP TABLE schedules;
`,
  },
  {
    version: 17,
    name: "channel records to the channel kit",
    sql: `
-- The channel records leave the Store for the channel kit's collections (namespace 'channels'),
-- each keyed by the JSON array of what names it ("|| ''" keeps that array a string in the doc);
-- the bouts of OpenAI users (platform 'openai') go to the Arena's own collection instead.
INSERT INTO collection_rows (namespace, collection, key, doc)
SELECT 'channels', 'bouts', json_array(platform, chat, fighter_id), json_object(
  'id', json_array(platform, chat, fighter_id) || '', 'platform', platform, 'chat', chat,
  'fighter_id', fighter_id, 'bout_id', bout_id, 'updated_at', updated_at)
FROM channel_bouts WHERE platform <> 'openai' ORDER BY updated_at;
INSERT INTO collection_rows (namespace, collection, key, doc)
SELECT 'arena-http', 'openai_bouts', json_array(chat, fighter_id), json_object(
  'id', json_array(chat, fighter_id) || '', 'user', chat, 'fighter_id', fighter_id,
  'bout_id', bout_id, 'updated_at', updated_at)
FROM channel_bouts WHERE platform = 'openai' ORDER BY updated_at;
INSERT INTO collection_rows (namespace, collection, key, doc)
SELECT 'channels', 'deliveries', json_array(platform, delivery_id), json_object(
  'id', json_array(platform, delivery_id) || '', 'platform', platform, 'delivery_id', delivery_id,
  'seen_at', seen_at)
FROM channel_deliveries ORDER BY seen_at;
INSERT INTO collection_rows (namespace, collection, key, doc)
SELECT 'channels', 'chats', json_array(platform, chat, fighter_id), json_object(
  'id', json_array(platform, chat, fighter_id) || '', 'platform', platform, 'chat', chat,
  'fighter_id', fighter_id, 'first_at', first_at, 'last_at', last_at)
FROM channel_chats ORDER BY first_at;
DROP TABLE channel_bouts;
DROP TABLE channel_deliveries;
DROP TABLE channel_chats;
`,
  },
  {
    version: 18,
    name: "gorillas to collections",
    sql: `
-- The gorilla runtime keeps its states and runs in the collections its scheduler plugins declare
-- (namespace "gorillas"). json_patch onto {} drops the NULL columns: an absent field stays absent.
-- A run holds running_gorilla only while running (the unique that keeps one running run per
-- gorilla). Runs are copied in seq order, so ties in started_at keep the order they were recorded.
INSERT INTO collection_rows (namespace, collection, key, doc)
SELECT 'gorillas', 'gorillas', name, json_patch('{}', json_object(
  'name', name, 'desired', desired, 'changed_at', changed_at, 'last_fire_at', last_fire_at))
FROM gorillas ORDER BY rowid;
INSERT INTO collection_rows (namespace, collection, key, doc)
SELECT 'gorillas', 'runs', id, json_patch('{}', json_object(
  'id', id, 'gorilla', gorilla, 'trigger', trigger, 'started_at', started_at,
  'finished_at', finished_at, 'outcome', outcome,
  'usage', json_object('input_tokens', input_tokens, 'output_tokens', output_tokens),
  'output', output, 'error', error, 'bout_id', bout_id,
  'running_gorilla', CASE WHEN outcome = 'running' THEN gorilla END))
FROM gorilla_runs ORDER BY seq;
DROP TABLE gorilla_runs;
DROP TABLE gorillas;
`,
  },
  {
    version: 19,
    name: "troops to troops-local collections",
    sql: `
-- Troops and their tasks become troops-local's own collections (plugin.json data): each row a
-- document in collection_rows, in the order it was written, and the tables go.
INSERT INTO collection_rows (namespace, collection, key, doc)
SELECT 'troops-local', 'troops', id, json_object(
  'id', id, 'name', name, 'leader', leader, 'members', json(members), 'strategy', strategy,
  'rotation', rotation, 'created_at', created_at)
FROM troops ORDER BY rowid;
INSERT INTO collection_rows (namespace, collection, key, doc)
SELECT 'troops-local', 'tasks', id, json_object(
  'id', id, 'troop_id', troop_id, 'task', task, 'strategy', strategy, 'status', status,
  'result', json_extract(body, '$.result'),
  'steps', json(json_extract(body, '$.steps')),
  'votes', json(json_extract(body, '$.votes')),
  'reason', json(json_extract(body, '$.reason')),
  'error', CASE WHEN error_code IS NULL THEN NULL
    ELSE json_object('code', error_code, 'message', error_message) END,
  'partial', json(CASE WHEN partial = 1 THEN 'true' ELSE 'false' END),
  'usage', json_object('input_tokens', input_tokens, 'output_tokens', output_tokens),
  'created_at', created_at, 'started_at', started_at, 'finished_at', finished_at)
FROM troop_tasks ORDER BY seq;
DROP TABLE troop_tasks;
DROP TABLE troops;
`,
  },
  {
    version: 20,
    name: "turns awaiting approval, and their taint",
    sql: `
-- A turn may wait for an approval (status awaiting_approval, not finished) and records its taint.
-- SQLite changes a CHECK only by making the table again: its rows are copied out and back (rowids
-- kept, for the order of turns started at the same instant). The messages and Idempotency-Keys that
-- point at the turns are checked at the commit (defer_foreign_keys), once every turn is back.
PRAGMA defer_foreign_keys = ON;
CREATE TEMP TABLE turns_before AS SELECT rowid AS row, * FROM turns;
DROP TABLE turns;
${TURNS_TABLE}
INSERT INTO turns (rowid, id, bout_id, fighter_id, status, error_code, error_message, started_at,
  finished_at, input_tokens, output_tokens, iterations, model, stop_reason)
SELECT row, id, bout_id, fighter_id, status, error_code, error_message, started_at,
  finished_at, input_tokens, output_tokens, iterations, model, stop_reason
FROM turns_before ORDER BY row;
DROP TABLE turns_before;
`,
  },
  {
    version: 21,
    name: "usage ledger per model call",
    sql: `
-- The usage ledger gets a row per model call: its bout, turn and origin, the prompt-cache tokens the
-- provider reported, and its cost in micro-units of the currency (NULL: the model is unpriced, as
-- every row written before this was). ALTER TABLE keeps the rows; usage_at serves the time ranges.
ALTER TABLE usage ADD COLUMN bout_id TEXT;
ALTER TABLE usage ADD COLUMN turn_id TEXT;
ALTER TABLE usage ADD COLUMN origin TEXT;
ALTER TABLE usage ADD COLUMN cached_tokens INTEGER NOT NULL DEFAULT 0 CHECK (cached_tokens >= 0);
ALTER TABLE usage ADD COLUMN cache_write_tokens INTEGER NOT NULL DEFAULT 0 CHECK (cache_write_tokens >= 0);
ALTER TABLE usage ADD COLUMN cost_micros INTEGER CHECK (cost_micros IS NULL OR cost_micros >= 0);
ALTER TABLE usage ADD COLUMN currency TEXT;
CREATE INDEX usage_at ON usage(at);
`,
  },
  {
    version: 22,
    name: "usage ledger by fighter and time",
    sql: `
-- GET /api/v1/usage and spar usage sum the calls of a time range (1M-row ledger: bench/usage-query.mjs).
-- usage_at becomes covering: it holds every column the sums and groups read, so a range is read from
-- the index alone, in time order, with no lookup into the table per call. usage_fighter_at reaches
-- one fighter's calls without walking every fighter's in the range.
DROP INDEX usage_at;
CREATE INDEX usage_at ON usage(at, fighter_id, provider, model, origin, input_tokens, output_tokens, cached_tokens, cache_write_tokens, cost_micros);
CREATE INDEX usage_fighter_at ON usage(fighter_id, at);
`,
  },
  { version: 23, name: "collection word index", sql: COLLECTION_WORDS },
];

/** The checksum recorded for a migration: sha256 (hex) of its SQL text, exactly as written. */
export function checksum(sql: string): string {
  return createHash("sha256").update(sql, "utf8").digest("hex");
}

/**
 * Checks the applied migrations (a new database: makes the baseline and records it) and applies the
 * pending ones, all in one transaction: a failure leaves the schema as it was. Returns the versions
 * it recorded.
 */
export function migrate(
  db: Database.Database,
  dbPath: string,
  migrations: readonly Migration[] = MIGRATIONS,
): number[] {
  const history = [...RETIRED, ...migrations.map((m) => ({ ...m, checksum: checksum(m.sql) }))];
  const run = db.transaction(() => {
    db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
  version INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  checksum TEXT NOT NULL,
  applied_at TEXT NOT NULL
)`);
    const applied = db
      .prepare<[], Recorded>("SELECT version, name, checksum FROM schema_migrations ORDER BY version")
      .all();
    const record = db.prepare<[number, string, string, string], void>(
      "INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (?, ?, ?, ?)",
    );
    let done = applied;
    if (applied.length === 0) {
      db.exec(BASELINE);
      done = history.filter((m) => m.version <= BASELINE_VERSION);
      for (const m of done) record.run(m.version, m.name, m.checksum, new Date().toISOString());
    } else checkApplied(applied, history, dbPath);
    const pending = migrations.filter((m) => !done.some((row) => row.version === m.version));
    for (const m of pending) {
      db.exec(m.sql);
      record.run(m.version, m.name, checksum(m.sql), new Date().toISOString());
    }
    return [...(applied.length === 0 ? done : []), ...pending].map((m) => m.version);
  });
  // IMMEDIATE takes the write lock first, so a second process cannot migrate the same database at once.
  return run.immediate();
}

/**
 * STORE_FAILED for a database newer than the code, a migration unknown here or a changed one;
 * STORE_TOO_OLD for one older than the previous release.
 */
function checkApplied(applied: Recorded[], history: Recorded[], dbPath: string): void {
  const known = new Map(history.map((m) => [m.version, m]));
  const newest = Math.max(...history.map((m) => m.version));
  const found = Math.max(...applied.map((row) => row.version));
  if (found > newest) {
    throw new SparError(
      "STORE_FAILED",
      `${dbPath} was written by a newer Spar (schema version ${found}, this one knows up to ${newest}); ` +
        "upgrade Spar to open it",
    );
  }
  if (found < OLDEST_UPGRADED) {
    throw new SparError(
      "STORE_TOO_OLD",
      `${dbPath} has schema version ${found}, older than this Spar upgrades (version ${OLDEST_UPGRADED} and ` +
        "later). Open it once with an earlier Spar (the previous release, commit bdea67e, upgrades it to " +
        `version ${OLDEST_UPGRADED}), then with this one`,
      { schema_version: found, oldest_upgraded: OLDEST_UPGRADED },
    );
  }
  for (const row of applied) {
    const migration = known.get(row.version);
    if (!migration) {
      throw new SparError(
        "STORE_FAILED",
        `${dbPath} records migration ${row.version} (${row.name}), unknown here`,
      );
    }
    if (migration.checksum !== row.checksum) {
      throw new SparError(
        "STORE_FAILED",
        `migration ${row.version} (${migration.name}) applied to ${dbPath} differs from this Spar's: ` +
          "the recorded checksum does not match its SQL",
        { migration: row.version },
      );
    }
  }
}
