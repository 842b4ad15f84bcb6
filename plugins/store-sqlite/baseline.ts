/**
 * The SQLite store's current schema (migrations.ts makes a new database from it in one step) and the
 * table definitions it shares with the migrations that first made them.
 */

/** Migration 13's SQL, which the baseline holds too. */
export const COLLECTION_TABLES = `
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
`;

/** Migration 23's SQL, which the baseline holds too. */
export const COLLECTION_WORDS = `
-- Collection.rank's word indexes: per collection that searches fields, an FTS5 table
-- collection_words_<id> (id from here) with a row per row of the collection (rowid =
-- collection_rows.seq, kept by put) holding the searched fields' text, a line each, and three
-- triggers that keep it in step with every write of the collection's rows, in the writing
-- statement's transaction. ensure (collections.ts) makes them, and makes them again when the fields
-- recorded here are not the declaration's. A table per collection: a word common in one collection
-- does not slow a search of another, and no search reads another collection's matches.
CREATE TABLE collection_search (
  id INTEGER PRIMARY KEY,
  namespace TEXT NOT NULL,
  collection TEXT NOT NULL,
  fields TEXT NOT NULL CHECK (json_valid(fields)),
  UNIQUE (namespace, collection)
);
`;

/** The turns table and its indexes as migration 20 leaves them (the baseline holds them too). */
export const TURNS_TABLE = `CREATE TABLE turns (
  id TEXT PRIMARY KEY,
  bout_id TEXT NOT NULL REFERENCES bouts(id),
  fighter_id TEXT NOT NULL REFERENCES fighters(id),
  status TEXT NOT NULL CHECK (status IN ('running', 'awaiting_approval', 'completed', 'failed', 'cancelled')),
  error_code TEXT,
  error_message TEXT,
  started_at TEXT NOT NULL,
  finished_at TEXT,
  input_tokens INTEGER NOT NULL DEFAULT 0,
  output_tokens INTEGER NOT NULL DEFAULT 0,
  iterations INTEGER NOT NULL DEFAULT 0,
  model TEXT,
  stop_reason TEXT,
  taint TEXT CHECK (taint IS NULL OR json_valid(taint)),
  CHECK ((status IN ('running', 'awaiting_approval')) = (finished_at IS NULL))
);
CREATE INDEX turns_bout ON turns(bout_id, started_at);
CREATE INDEX turns_running ON turns(status) WHERE status = 'running';
CREATE INDEX turns_awaiting ON turns(started_at) WHERE status = 'awaiting_approval';
-- The turns a prompt's history has to know about: few, however many turns a bout has.
CREATE INDEX turns_unfinished ON turns(bout_id, started_at) WHERE status <> 'completed';
`;

/** The migrations a database of the previous release or later may still need. */

/** The version the baseline is equal to: migrations after it still run on a new database. */
export const BASELINE_VERSION = 23;

/**
 * The current schema, which a new database is made from in one step: the Ring's own records and the
 * plugins' collections (what migrations 1 to 23 leave, the tables they moved into collections never
 * made). A test compares it with a database of the previous release upgraded by the migrations.
 */
export const BASELINE = `
-- Names are unique among live fighters only, so a killed fighter's name can be used again.
CREATE TABLE fighters (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  manifest TEXT NOT NULL CHECK (json_valid(manifest)),
  created_at TEXT NOT NULL,
  killed_at TEXT
);
CREATE UNIQUE INDEX fighters_live_name ON fighters(name) WHERE killed_at IS NULL;

-- message_count and compacted_through (the last compacted seq) are kept as messages are added and
-- compacted, so that neither finding a fighter's latest bout nor building a prompt reads more of a bout
-- than its uncompacted tail. origin: who started the bout when not a user, 'fighter:<id>' (the bout a
-- fighter's messages to this one run in, one per caller) or 'troop-task:<id>'; NULL for a user's bout,
-- and only those are the latest bout a message without a bout continues.
CREATE TABLE bouts (
  id TEXT PRIMARY KEY,
  fighter_id TEXT NOT NULL REFERENCES fighters(id),
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  message_count INTEGER NOT NULL DEFAULT 0,
  compacted_through INTEGER NOT NULL DEFAULT 0,
  origin TEXT
);
CREATE INDEX bouts_fighter_updated ON bouts(fighter_id, updated_at);
CREATE INDEX bouts_fighter_origin ON bouts(fighter_id, origin, updated_at);

-- A turn is one user message and everything done about it, each step committed as it happened.
-- A turn that did not complete keeps its messages (a tool that ran is never forgotten) and says why.
-- awaiting_approval: a call of it waits for an operator's answer; it is resumed, never abandoned.
-- taint: the untrusted content it took in (JSON, the first sources).
${TURNS_TABLE}
-- UNIQUE(bout_id, seq) is also the index for listing a bout and for its max(seq). Messages stored
-- before turns were (migration 5) belong to no turn; every later one belongs to exactly one.
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
  turn_id TEXT REFERENCES turns(id),
  UNIQUE (bout_id, seq),
  CHECK (role <> 'tool' OR (tool_call_id IS NOT NULL AND name IS NOT NULL))
);

-- What replaced a bout's compacted messages in the model's context (messages.compacted).
CREATE TABLE bout_summaries (
  bout_id TEXT PRIMARY KEY REFERENCES bouts(id),
  summary TEXT NOT NULL,
  through_seq INTEGER NOT NULL,
  updated_at TEXT NOT NULL
);

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

-- One row per model call (per answered message before migration 21): whose, on which model, the
-- tokens the provider reported and the cost in micro-units of the currency (NULL: unpriced). Read
-- back summed per model.
CREATE TABLE usage (
  fighter_id TEXT NOT NULL REFERENCES fighters(id),
  provider TEXT NOT NULL,
  model TEXT NOT NULL,
  at TEXT NOT NULL,
  input_tokens INTEGER NOT NULL CHECK (input_tokens >= 0),
  output_tokens INTEGER NOT NULL CHECK (output_tokens >= 0), bout_id TEXT, turn_id TEXT, origin TEXT,
  cached_tokens INTEGER NOT NULL DEFAULT 0 CHECK (cached_tokens >= 0),
  cache_write_tokens INTEGER NOT NULL DEFAULT 0 CHECK (cache_write_tokens >= 0),
  cost_micros INTEGER CHECK (cost_micros IS NULL OR cost_micros >= 0), currency TEXT
);
CREATE INDEX usage_fighter_model ON usage(fighter_id, provider, model);
-- usage_at covers the usage queries (GET /api/v1/usage): every column they read, after the time.
CREATE INDEX usage_at ON usage(at, fighter_id, provider, model, origin, input_tokens, output_tokens, cached_tokens, cache_write_tokens, cost_micros);
CREATE INDEX usage_fighter_at ON usage(fighter_id, at);

-- Request-signature nonces seen, kept until they could no longer pass the created-time check, so
-- a replay is refused across restarts too.
CREATE TABLE nonces (
  key_id TEXT NOT NULL,
  nonce TEXT NOT NULL,
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (key_id, nonce)
);
CREATE INDEX nonces_expiry ON nonces(expires_at);
${COLLECTION_TABLES}${COLLECTION_WORDS}`;
