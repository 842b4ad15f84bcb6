/**
 * Numbered, checksummed schema migrations. A released migration's SQL is frozen: its sha256 is recorded
 * when applied, and a mismatch on a later open means the code and the database disagree about the
 * schema, which is safer to stop on than to guess about. Add a new migration instead of editing one.
 */
import { createHash } from "node:crypto";
import type Database from "better-sqlite3-multiple-ciphers";
import { SparError } from "../../sdk/index.js";

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "fighters-bouts-messages-memories",
    sql: `
CREATE TABLE fighters (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  manifest TEXT NOT NULL CHECK (json_valid(manifest)),
  created_at TEXT NOT NULL,
  killed_at TEXT
);
-- Names are unique among live fighters only, so a killed fighter's name can be used again.
CREATE UNIQUE INDEX fighters_live_name ON fighters(name) WHERE killed_at IS NULL;

CREATE TABLE bouts (
  id TEXT PRIMARY KEY,
  fighter_id TEXT NOT NULL REFERENCES fighters(id),
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX bouts_fighter_updated ON bouts(fighter_id, updated_at);

-- UNIQUE(bout_id, seq) is also the index for listing a bout and for its max(seq).
CREATE TABLE messages (
  id TEXT PRIMARY KEY,
  bout_id TEXT NOT NULL REFERENCES bouts(id),
  seq INTEGER NOT NULL,
  role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'tool')),
  content TEXT NOT NULL,
  tool_calls TEXT CHECK (tool_calls IS NULL OR json_valid(tool_calls)),
  tool_call_id TEXT,
  name TEXT,
  is_error INTEGER NOT NULL DEFAULT 0 CHECK (is_error IN (0, 1)),
  compacted INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  UNIQUE (bout_id, seq),
  CHECK (role <> 'tool' OR (tool_call_id IS NOT NULL AND name IS NOT NULL))
);

CREATE TABLE memories (
  id TEXT PRIMARY KEY,
  fighter_id TEXT NOT NULL REFERENCES fighters(id),
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  score0 REAL NOT NULL DEFAULT 1,
  created_at TEXT NOT NULL,
  accessed_at TEXT NOT NULL,
  UNIQUE (fighter_id, key)
);
`,
  },
  {
    version: 2,
    name: "decay-summaries-creeds-relationships-knowledge",
    sql: `
-- A memory decays from when it was last scored; until now that was its last write. ALTER TABLE
-- cannot add a NOT NULL column without a default, so the code is what keeps scored_at set.
ALTER TABLE memories ADD COLUMN scored_at TEXT;
UPDATE memories SET scored_at = coalesce(accessed_at, created_at);
CREATE INDEX memories_fighter_scored ON memories(fighter_id, scored_at);

-- What replaced a bout's compacted messages in the model's context (messages.compacted, migration 1).
CREATE TABLE bout_summaries (
  bout_id TEXT PRIMARY KEY REFERENCES bouts(id),
  summary TEXT NOT NULL,
  through_seq INTEGER NOT NULL,
  updated_at TEXT NOT NULL
);

-- Keyed by name, not id: a creed and its relationships outlive a kill and a respawn.
CREATE TABLE creeds (
  fighter_name TEXT PRIMARY KEY,
  document TEXT NOT NULL CHECK (json_valid(document)),
  updated_at TEXT NOT NULL
);

CREATE TABLE relationships (
  fighter_name TEXT NOT NULL,
  other TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('fighter', 'user')),
  exchanges INTEGER NOT NULL,
  last_contact TEXT NOT NULL,
  note TEXT NOT NULL,
  PRIMARY KEY (fighter_name, other)
);
CREATE INDEX relationships_recent ON relationships(fighter_name, last_contact);

CREATE TABLE kg_entities (
  id TEXT PRIMARY KEY,
  fighter_id TEXT NOT NULL REFERENCES fighters(id),
  name TEXT NOT NULL,
  type TEXT NOT NULL,
  created_at TEXT NOT NULL
);
-- An entity is its name and type in any (ASCII) case; this index also finds an entity by name.
CREATE UNIQUE INDEX kg_entities_identity ON kg_entities(fighter_id, lower(name), lower(type));
CREATE INDEX kg_entities_recent ON kg_entities(fighter_id, created_at);

-- SQLite refuses expressions in a PRIMARY KEY, so a relation's identity is a unique index instead;
-- it also serves "relations from an entity", kg_relations_to "relations to it".
CREATE TABLE kg_relations (
  fighter_id TEXT NOT NULL REFERENCES fighters(id),
  from_id TEXT NOT NULL REFERENCES kg_entities(id),
  to_id TEXT NOT NULL REFERENCES kg_entities(id),
  type TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE UNIQUE INDEX kg_relations_identity ON kg_relations(from_id, to_id, lower(type));
CREATE INDEX kg_relations_to ON kg_relations(to_id);
`,
  },
  {
    version: 3,
    name: "usage",
    sql: `
-- One row per answered message: what it cost, on which model. Read back summed per model.
CREATE TABLE usage (
  fighter_id TEXT NOT NULL REFERENCES fighters(id),
  provider TEXT NOT NULL,
  model TEXT NOT NULL,
  at TEXT NOT NULL,
  input_tokens INTEGER NOT NULL CHECK (input_tokens >= 0),
  output_tokens INTEGER NOT NULL CHECK (output_tokens >= 0)
);
CREATE INDEX usage_fighter_model ON usage(fighter_id, provider, model);
`,
  },
  {
    version: 4,
    name: "nonces",
    sql: `
-- Request-signature nonces seen, kept until they could no longer pass the created-time check, so
-- a replay is refused across restarts too.
CREATE TABLE nonces (
  key_id TEXT NOT NULL,
  nonce TEXT NOT NULL,
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (key_id, nonce)
);
CREATE INDEX nonces_expiry ON nonces(expires_at);
`,
  },
  {
    version: 5,
    name: "turns-idempotency",
    sql: `
-- A turn is one user message and everything done about it, each step committed as it happened.
-- A turn that did not complete keeps its messages (a tool that ran is never forgotten) and says why.
CREATE TABLE turns (
  id TEXT PRIMARY KEY,
  bout_id TEXT NOT NULL REFERENCES bouts(id),
  fighter_id TEXT NOT NULL REFERENCES fighters(id),
  status TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'cancelled')),
  error_code TEXT,
  error_message TEXT,
  started_at TEXT NOT NULL,
  finished_at TEXT,
  input_tokens INTEGER NOT NULL DEFAULT 0,
  output_tokens INTEGER NOT NULL DEFAULT 0,
  iterations INTEGER NOT NULL DEFAULT 0,
  model TEXT,
  stop_reason TEXT,
  CHECK ((status = 'running') = (finished_at IS NULL))
);
CREATE INDEX turns_bout ON turns(bout_id, started_at);
CREATE INDEX turns_running ON turns(status) WHERE status = 'running';

-- Messages stored before this migration belong to no turn; every later one belongs to exactly one.
ALTER TABLE messages ADD COLUMN turn_id TEXT REFERENCES turns(id);

-- Idempotency-Key: the first attempt's turn and, once it ended, its reply; kept 24 hours.
CREATE TABLE idempotency (
  key TEXT PRIMARY KEY,
  request_hash TEXT NOT NULL,
  fighter_id TEXT NOT NULL REFERENCES fighters(id),
  turn_id TEXT NOT NULL UNIQUE REFERENCES turns(id),
  created_at TEXT NOT NULL,
  reply TEXT CHECK (reply IS NULL OR json_valid(reply))
);
CREATE INDEX idempotency_created ON idempotency(created_at);
`,
  },
  {
    version: 6,
    name: "bout-counters",
    sql: `
-- Kept as messages are added and compacted, so that neither finding a fighter's latest bout nor
-- building a prompt reads more of a bout than its uncompacted tail.
ALTER TABLE bouts ADD COLUMN message_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE bouts ADD COLUMN compacted_through INTEGER NOT NULL DEFAULT 0;
UPDATE bouts SET
  message_count = (SELECT count(*) FROM messages m WHERE m.bout_id = bouts.id),
  compacted_through = coalesce((SELECT max(seq) FROM messages m WHERE m.bout_id = bouts.id AND m.compacted = 1), 0);

-- The turns a prompt's history has to know about: few, however many turns a bout has.
CREATE INDEX turns_unfinished ON turns(bout_id, started_at) WHERE status <> 'completed';
`,
  },
  {
    version: 7,
    name: "schedules",
    sql: `
-- Messages fighters scheduled for themselves: once, or on a cron expression.
CREATE TABLE schedules (
  id TEXT PRIMARY KEY,
  fighter_id TEXT NOT NULL REFERENCES fighters(id),
  message TEXT NOT NULL,
  cron TEXT,
  timezone TEXT,
  next_run_at TEXT NOT NULL,
  created_at TEXT NOT NULL,
  last_run_at TEXT,
  last_status TEXT
);
CREATE INDEX schedules_fighter ON schedules(fighter_id, next_run_at);
CREATE INDEX schedules_next ON schedules(next_run_at);
`,
  },
  {
    version: 8,
    name: "gorillas",
    sql: `
-- What the operator asked of each gorilla, by name (the gorillas themselves are GORILLA.toml files).
CREATE TABLE gorillas (
  name TEXT PRIMARY KEY,
  desired TEXT NOT NULL CHECK (desired IN ('caged', 'unleashed')),
  changed_at TEXT NOT NULL,
  last_fire_at TEXT
);

-- Every cycle and every skipped fire. seq orders runs that started at the same time, and is what
-- stays when a VACUUM renumbers rowids (it is the rowid).
CREATE TABLE gorilla_runs (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  gorilla TEXT NOT NULL,
  trigger TEXT NOT NULL CHECK (trigger IN ('schedule', 'manual', 'catch_up')),
  started_at TEXT NOT NULL,
  finished_at TEXT,
  outcome TEXT NOT NULL CHECK (outcome IN ('running', 'ok', 'failed', 'aborted', 'skipped')),
  input_tokens INTEGER NOT NULL DEFAULT 0,
  output_tokens INTEGER NOT NULL DEFAULT 0,
  output TEXT,
  error TEXT,
  bout_id TEXT REFERENCES bouts(id),
  CHECK ((outcome = 'running') = (finished_at IS NULL))
);
-- Newest first per gorilla, and the pages after a run: (gorilla, started_at, seq) in the index.
CREATE INDEX gorilla_runs_newest ON gorilla_runs(gorilla, started_at);
-- At most one running cycle per gorilla; also all that abandon() reads at start.
CREATE UNIQUE INDEX gorilla_runs_running ON gorilla_runs(gorilla) WHERE outcome = 'running';
`,
  },
  {
    version: 9,
    name: "troops",
    sql: `
-- Fighters working on tasks under one strategy. Names are unique; rotation is the round-robin
-- counter, advanced in place so it survives restarts.
CREATE TABLE troops (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  leader TEXT NOT NULL,
  members TEXT NOT NULL CHECK (json_valid(members)),
  strategy TEXT NOT NULL,
  rotation INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL
);

-- A troop's tasks. What the user and the fighters wrote is in task and body (JSON: result, steps,
-- votes, reason); what abandon() sets is in plain columns, so it is one UPDATE. seq (the rowid)
-- orders tasks created at the same time.
CREATE TABLE troop_tasks (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  troop_id TEXT NOT NULL REFERENCES troops(id),
  task TEXT NOT NULL,
  strategy TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'running', 'completed', 'failed', 'cancelled')),
  body TEXT NOT NULL CHECK (json_valid(body)),
  error_code TEXT,
  error_message TEXT,
  partial INTEGER NOT NULL DEFAULT 0 CHECK (partial IN (0, 1)),
  input_tokens INTEGER NOT NULL DEFAULT 0,
  output_tokens INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  started_at TEXT,
  finished_at TEXT,
  CHECK ((error_code IS NULL) = (error_message IS NULL))
);
-- Newest first per troop, and the pages after a task: (troop_id, created_at, seq) in the index.
CREATE INDEX troop_tasks_newest ON troop_tasks(troop_id, created_at);
-- The tasks abandon() reads at start: few, however many tasks there are.
CREATE INDEX troop_tasks_unfinished ON troop_tasks(status) WHERE status IN ('pending', 'running');
`,
  },
  {
    version: 10,
    name: "channel bouts",
    sql: `
-- The bout each channel chat talks to its fighter in: one conversation per chat, so two people
-- writing to the same bot never share a context. Keyed by fighter too: a respawned fighter starts
-- fresh bouts.
CREATE TABLE channel_bouts (
  platform TEXT NOT NULL,
  chat TEXT NOT NULL,
  fighter_id TEXT NOT NULL,
  bout_id TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (platform, chat, fighter_id)
) WITHOUT ROWID;
`,
  },
  {
    version: 11,
    name: "bout origins",
    sql: `
-- Who started a bout when it was not a user: 'fighter:<id>' (the bout a fighter's messages to this
-- one run in, one per caller) or 'troop-task:<id>'. NULL for a user's bout: only those are the
-- latest bout a message without a bout continues.
ALTER TABLE bouts ADD COLUMN origin TEXT;
CREATE INDEX bouts_fighter_origin ON bouts(fighter_id, origin, updated_at);
`,
  },
  {
    version: 12,
    name: "channel deliveries and chats",
    sql: `
-- Every channel delivery taken in, so one replayed after a restart is still refused; pruned by age.
CREATE TABLE channel_deliveries (
  platform TEXT NOT NULL,
  delivery_id TEXT NOT NULL,
  seen_at TEXT NOT NULL,
  PRIMARY KEY (platform, delivery_id)
) WITHOUT ROWID;
CREATE INDEX channel_deliveries_seen ON channel_deliveries(seen_at);
-- The chats that reached a fighter through an allowed sender: where its channel_notify may post.
CREATE TABLE channel_chats (
  platform TEXT NOT NULL,
  chat TEXT NOT NULL,
  fighter_id TEXT NOT NULL,
  first_at TEXT NOT NULL,
  last_at TEXT NOT NULL,
  PRIMARY KEY (fighter_id, platform, chat)
) WITHOUT ROWID;
`,
  },
  {
    version: 13,
    name: "plugin collections",
    sql: `
-- Every plugin's own data (api.data, collections.ts): a document per row, by namespace, collection
-- and key; seq is the write order (kept when a row is replaced). Each collection's indexes are partial
-- expression indexes over json_extract(doc, ...), made when the plugin first uses it.
CREATE TABLE collection_rows (
  seq INTEGER PRIMARY KEY,
  namespace TEXT NOT NULL,
  collection TEXT NOT NULL,
  key TEXT NOT NULL,
  doc TEXT NOT NULL CHECK (json_valid(doc)),
  UNIQUE (namespace, collection, key)
);
-- The declaration each collection's indexes were made from: its version and checksum.
CREATE TABLE collection_schemas (
  namespace TEXT NOT NULL,
  collection TEXT NOT NULL,
  version INTEGER NOT NULL,
  checksum TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (namespace, collection)
) WITHOUT ROWID;
`,
  },
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
];

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
 * Checks the applied migrations against `migrations` and applies the pending ones, all in one
 * transaction: a failure leaves the schema as it was. Returns the versions it applied.
 */
export function migrate(
  db: Database.Database,
  dbPath: string,
  migrations: readonly Migration[] = MIGRATIONS,
): number[] {
  const run = db.transaction(() => {
    db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
  version INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  checksum TEXT NOT NULL,
  applied_at TEXT NOT NULL
)`);
    const applied = db
      .prepare<[], AppliedRow>("SELECT version, name, checksum FROM schema_migrations ORDER BY version")
      .all();
    checkApplied(applied, migrations, dbPath);
    const done = new Set(applied.map((row) => row.version));
    const record = db.prepare<[number, string, string, string], void>(
      "INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (?, ?, ?, ?)",
    );
    const pending = migrations.filter((m) => !done.has(m.version));
    for (const m of pending) {
      db.exec(m.sql);
      record.run(m.version, m.name, checksum(m.sql), new Date().toISOString());
    }
    return pending.map((m) => m.version);
  });
  // IMMEDIATE takes the write lock first, so a second process cannot migrate the same database at once.
  return run.immediate();
}

function checkApplied(applied: AppliedRow[], migrations: readonly Migration[], dbPath: string): void {
  const known = new Map(migrations.map((m) => [m.version, m]));
  const newest = Math.max(0, ...migrations.map((m) => m.version));
  for (const row of applied) {
    if (row.version > newest) {
      throw new SparError(
        "STORE_FAILED",
        `${dbPath} was written by a newer Spar (schema version ${row.version}, this one knows up to ${newest}); ` +
          "upgrade Spar to open it",
      );
    }
    const migration = known.get(row.version);
    if (!migration) {
      throw new SparError(
        "STORE_FAILED",
        `${dbPath} records migration ${row.version} (${row.name}), unknown here`,
      );
    }
    if (checksum(migration.sql) !== row.checksum) {
      throw new SparError(
        "STORE_FAILED",
        `migration ${row.version} (${migration.name}) applied to ${dbPath} differs from this Spar's: ` +
          "the recorded checksum does not match its SQL",
        { migration: row.version },
      );
    }
  }
}
