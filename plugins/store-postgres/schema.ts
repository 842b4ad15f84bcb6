/**
 * Version 5: every plugin's own data (api.data, collections.ts). A document per row, sealed, found by
 * an HMAC of its key; `seq` is the write order (kept when a row is replaced). The indexed fields are
 * copied into slots, by kind: `mac_slots` string HMACs (equality only, never the text), `num_slots`
 * numbers and booleans (0/1), `time_slots` ISO times (compared bytewise, as SQLite does). `layout` is
 * the collection version whose slot layout the row's slots follow (0: none yet, as `importDocs`
 * writes them). Each collection's indexes are partial expression indexes over its slots, made by
 * `ensure`. `doc` is NULL only in a transaction's placeholder for a key it read absent, deleted
 * before it commits.
 */
export const COLLECTIONS = `
CREATE TABLE collection_rows (
  seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  namespace TEXT NOT NULL,
  collection TEXT NOT NULL,
  key_mac BYTEA NOT NULL,
  doc BYTEA,
  layout INTEGER NOT NULL DEFAULT 0,
  mac_slots BYTEA[],
  num_slots DOUBLE PRECISION[],
  time_slots TEXT[] COLLATE "C",
  CONSTRAINT collection_rows_key UNIQUE (namespace, collection, key_mac)
);
CREATE INDEX collection_rows_order ON collection_rows (namespace, collection, seq);
-- Per collection: the declaration's version and checksum, and the slot layout its rows follow;
-- reslot marks rows imported after it was recorded, for the next ensure to slot.
CREATE TABLE collection_schemas (
  namespace TEXT NOT NULL,
  collection TEXT NOT NULL,
  version INTEGER NOT NULL,
  checksum TEXT NOT NULL,
  layout TEXT NOT NULL,
  reslot BOOLEAN NOT NULL DEFAULT false,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (namespace, collection)
);
`;

/**
 * The current schema, which a new schema is made from in one step (migrations.ts): the Ring's own
 * records and the plugins' collections, what versions 1 to 5 leave once the tables they held for
 * plugins are moved into collections (legacy.ts). What users and models wrote is bytea (sealed by
 * cipher.ts); ids, names' HMACs, times (ISO text, so they round-trip exactly and compare as text),
 * statuses and counters are plain. `seq` identity columns order rows written at the same time.
 */
export const BASELINE = `
-- One row per key: the key derivation's salt and the key check (cipher.ts).
CREATE TABLE spar_meta (
  key TEXT PRIMARY KEY,
  value BYTEA NOT NULL
);

-- A name is sealed (name_sealed) and found by its HMAC (name_mac, names.ts). name held it in plaintext
-- before version 4; names.ts seals what a Spar of that schema left there, and new rows leave it NULL.
CREATE TABLE fighters (
  seq BIGINT GENERATED ALWAYS AS IDENTITY,
  id TEXT PRIMARY KEY,
  name TEXT,
  manifest BYTEA NOT NULL,
  created_at TEXT NOT NULL,
  killed_at TEXT,
  name_mac BYTEA,
  name_sealed BYTEA
);
-- Names are unique among live fighters only, so a killed fighter's name can be used again.
CREATE UNIQUE INDEX fighters_live_name_mac ON fighters(name_mac) WHERE killed_at IS NULL;

-- origin: who started the bout when not a user, 'fighter:<id>' (the bout a fighter's messages to this
-- one run in, one per caller) or 'troop-task:<id>'; NULL for a user's bout, and only those are the
-- latest bout a message without a bout continues.
CREATE TABLE bouts (
  seq BIGINT GENERATED ALWAYS AS IDENTITY,
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

CREATE TABLE turns (
  seq BIGINT GENERATED ALWAYS AS IDENTITY,
  id TEXT PRIMARY KEY,
  bout_id TEXT NOT NULL REFERENCES bouts(id),
  fighter_id TEXT NOT NULL REFERENCES fighters(id),
  status TEXT NOT NULL CHECK (status IN ('running', 'awaiting_approval', 'completed', 'failed', 'cancelled')),
  error_code TEXT,
  error_message TEXT,
  started_at TEXT NOT NULL,
  finished_at TEXT,
  input_tokens BIGINT NOT NULL DEFAULT 0,
  output_tokens BIGINT NOT NULL DEFAULT 0,
  iterations INTEGER NOT NULL DEFAULT 0,
  model TEXT,
  stop_reason TEXT,
  -- The untrusted content the turn took in (JSON, the first sources), as the approval requests show it.
  taint TEXT,
  CHECK ((status IN ('running', 'awaiting_approval')) = (finished_at IS NULL))
);
CREATE INDEX turns_bout ON turns(bout_id, started_at);
CREATE INDEX turns_running ON turns(status) WHERE status = 'running';
CREATE INDEX turns_awaiting ON turns(started_at) WHERE status = 'awaiting_approval';
CREATE INDEX turns_unfinished ON turns(bout_id, started_at) WHERE status <> 'completed';

-- UNIQUE(bout_id, seq) is also the index for listing a bout and for its max(seq).
CREATE TABLE messages (
  id TEXT PRIMARY KEY,
  bout_id TEXT NOT NULL REFERENCES bouts(id),
  seq INTEGER NOT NULL,
  role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'tool')),
  content BYTEA NOT NULL,
  tool_calls BYTEA,
  tool_call_id TEXT,
  name TEXT,
  is_error BOOLEAN NOT NULL DEFAULT FALSE,
  compacted BOOLEAN NOT NULL DEFAULT FALSE,
  created_at TEXT NOT NULL,
  turn_id TEXT REFERENCES turns(id),
  UNIQUE (bout_id, seq),
  CHECK (role <> 'tool' OR (tool_call_id IS NOT NULL AND name IS NOT NULL))
);

CREATE TABLE bout_summaries (
  bout_id TEXT PRIMARY KEY REFERENCES bouts(id),
  summary BYTEA NOT NULL,
  through_seq INTEGER NOT NULL,
  updated_at TEXT NOT NULL
);

-- The key is sealed (key_sealed) and found by its HMAC (key_mac); key, as fighters.name above.
CREATE TABLE idempotency (
  key TEXT,
  request_hash TEXT NOT NULL,
  fighter_id TEXT NOT NULL REFERENCES fighters(id),
  turn_id TEXT NOT NULL UNIQUE REFERENCES turns(id),
  created_at TEXT NOT NULL,
  reply BYTEA,
  key_mac BYTEA,
  key_sealed BYTEA
);
CREATE INDEX idempotency_created ON idempotency(created_at);
CREATE UNIQUE INDEX idempotency_key_mac ON idempotency(key_mac);

CREATE TABLE usage (
  fighter_id TEXT NOT NULL REFERENCES fighters(id),
  provider TEXT NOT NULL,
  model TEXT NOT NULL,
  at TEXT NOT NULL,
  input_tokens BIGINT NOT NULL CHECK (input_tokens >= 0),
  output_tokens BIGINT NOT NULL CHECK (output_tokens >= 0),
  bout_id TEXT,
  turn_id TEXT,
  origin TEXT,
  cached_tokens BIGINT NOT NULL DEFAULT 0 CHECK (cached_tokens >= 0),
  cache_write_tokens BIGINT NOT NULL DEFAULT 0 CHECK (cache_write_tokens >= 0),
  cost_micros BIGINT CHECK (cost_micros IS NULL OR cost_micros >= 0),
  currency TEXT
);
CREATE INDEX usage_fighter_model ON usage(fighter_id, provider, model);
-- usage_at covers the usage queries (GET /api/v1/usage): every column they read, after the time.
CREATE INDEX usage_at ON usage(at) INCLUDE (fighter_id, provider, model, origin, input_tokens, output_tokens, cached_tokens, cache_write_tokens, cost_micros);
CREATE INDEX usage_fighter_at ON usage(fighter_id, at);

CREATE TABLE nonces (
  key_id TEXT NOT NULL,
  nonce TEXT NOT NULL,
  expires_at BIGINT NOT NULL,
  PRIMARY KEY (key_id, nonce)
);
CREATE INDEX nonces_expiry ON nonces(expires_at);
${COLLECTIONS}`;
