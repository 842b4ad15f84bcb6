/**
 * Migration 1: every table, in the store's own schema. What users and models wrote is bytea
 * (sealed by cipher.ts); ids, names, times (ISO text, so they round-trip exactly and compare as
 * text), statuses and counters are plain. `seq` identity columns order rows written at the same time.
 */
export const SCHEMA_V1 = `
-- One row per key: the key derivation's salt and the key check (cipher.ts).
CREATE TABLE spar_meta (
  key TEXT PRIMARY KEY,
  value BYTEA NOT NULL
);

CREATE TABLE fighters (
  seq BIGINT GENERATED ALWAYS AS IDENTITY,
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  manifest BYTEA NOT NULL,
  created_at TEXT NOT NULL,
  killed_at TEXT
);
-- Names are unique among live fighters only, so a killed fighter's name can be used again.
CREATE UNIQUE INDEX fighters_live_name ON fighters(name) WHERE killed_at IS NULL;

CREATE TABLE bouts (
  seq BIGINT GENERATED ALWAYS AS IDENTITY,
  id TEXT PRIMARY KEY,
  fighter_id TEXT NOT NULL REFERENCES fighters(id),
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  message_count INTEGER NOT NULL DEFAULT 0,
  compacted_through INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX bouts_fighter_updated ON bouts(fighter_id, updated_at);

CREATE TABLE turns (
  seq BIGINT GENERATED ALWAYS AS IDENTITY,
  id TEXT PRIMARY KEY,
  bout_id TEXT NOT NULL REFERENCES bouts(id),
  fighter_id TEXT NOT NULL REFERENCES fighters(id),
  status TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'cancelled')),
  error_code TEXT,
  error_message TEXT,
  started_at TEXT NOT NULL,
  finished_at TEXT,
  input_tokens BIGINT NOT NULL DEFAULT 0,
  output_tokens BIGINT NOT NULL DEFAULT 0,
  iterations INTEGER NOT NULL DEFAULT 0,
  model TEXT,
  stop_reason TEXT,
  CHECK ((status = 'running') = (finished_at IS NULL))
);
CREATE INDEX turns_bout ON turns(bout_id, started_at);
CREATE INDEX turns_running ON turns(status) WHERE status = 'running';
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

CREATE TABLE idempotency (
  key TEXT PRIMARY KEY,
  request_hash TEXT NOT NULL,
  fighter_id TEXT NOT NULL REFERENCES fighters(id),
  turn_id TEXT NOT NULL UNIQUE REFERENCES turns(id),
  created_at TEXT NOT NULL,
  reply BYTEA
);
CREATE INDEX idempotency_created ON idempotency(created_at);

-- key_mac is an HMAC of the key (cipher.ts): the key itself is sealed, its uniqueness still enforced.
CREATE TABLE memories (
  seq BIGINT GENERATED ALWAYS AS IDENTITY,
  id TEXT PRIMARY KEY,
  fighter_id TEXT NOT NULL REFERENCES fighters(id),
  key_mac BYTEA NOT NULL,
  key BYTEA NOT NULL,
  value BYTEA NOT NULL,
  score0 DOUBLE PRECISION NOT NULL DEFAULT 1,
  scored_at TEXT NOT NULL,
  created_at TEXT NOT NULL,
  UNIQUE (fighter_id, key_mac)
);
CREATE INDEX memories_fighter_scored ON memories(fighter_id, scored_at);

CREATE TABLE creeds (
  fighter_name TEXT PRIMARY KEY,
  document BYTEA NOT NULL,
  updated_at TEXT NOT NULL
);

CREATE TABLE relationships (
  seq BIGINT GENERATED ALWAYS AS IDENTITY,
  fighter_name TEXT NOT NULL,
  other TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('fighter', 'user')),
  exchanges INTEGER NOT NULL,
  last_contact TEXT NOT NULL,
  note BYTEA NOT NULL,
  PRIMARY KEY (fighter_name, other)
);
CREATE INDEX relationships_recent ON relationships(fighter_name, last_contact);

-- An entity is its name and type in any (ASCII) case: identity_mac digests both folded, name_mac
-- the name alone (relation endpoints are found by name).
CREATE TABLE kg_entities (
  seq BIGINT GENERATED ALWAYS AS IDENTITY,
  id TEXT PRIMARY KEY,
  fighter_id TEXT NOT NULL REFERENCES fighters(id),
  name BYTEA NOT NULL,
  type BYTEA NOT NULL,
  identity_mac BYTEA NOT NULL,
  name_mac BYTEA NOT NULL,
  created_at TEXT NOT NULL,
  UNIQUE (fighter_id, identity_mac)
);
CREATE INDEX kg_entities_name ON kg_entities(fighter_id, name_mac);
CREATE INDEX kg_entities_recent ON kg_entities(fighter_id, created_at);

CREATE TABLE kg_relations (
  seq BIGINT GENERATED ALWAYS AS IDENTITY,
  fighter_id TEXT NOT NULL REFERENCES fighters(id),
  from_id TEXT NOT NULL REFERENCES kg_entities(id),
  to_id TEXT NOT NULL REFERENCES kg_entities(id),
  type BYTEA NOT NULL,
  type_mac BYTEA NOT NULL,
  created_at TEXT NOT NULL,
  UNIQUE (from_id, to_id, type_mac)
);
CREATE INDEX kg_relations_to ON kg_relations(to_id);

CREATE TABLE usage (
  fighter_id TEXT NOT NULL REFERENCES fighters(id),
  provider TEXT NOT NULL,
  model TEXT NOT NULL,
  at TEXT NOT NULL,
  input_tokens BIGINT NOT NULL CHECK (input_tokens >= 0),
  output_tokens BIGINT NOT NULL CHECK (output_tokens >= 0)
);
CREATE INDEX usage_fighter_model ON usage(fighter_id, provider, model);

CREATE TABLE nonces (
  key_id TEXT NOT NULL,
  nonce TEXT NOT NULL,
  expires_at BIGINT NOT NULL,
  PRIMARY KEY (key_id, nonce)
);
CREATE INDEX nonces_expiry ON nonces(expires_at);

CREATE TABLE schedules (
  seq BIGINT GENERATED ALWAYS AS IDENTITY,
  id TEXT PRIMARY KEY,
  fighter_id TEXT NOT NULL REFERENCES fighters(id),
  message BYTEA NOT NULL,
  cron TEXT,
  timezone TEXT,
  next_run_at TEXT NOT NULL,
  created_at TEXT NOT NULL,
  last_run_at TEXT,
  last_status TEXT
);
CREATE INDEX schedules_fighter ON schedules(fighter_id, next_run_at);
CREATE INDEX schedules_next ON schedules(next_run_at);

CREATE TABLE gorillas (
  name TEXT PRIMARY KEY,
  desired TEXT NOT NULL CHECK (desired IN ('caged', 'unleashed')),
  changed_at TEXT NOT NULL,
  last_fire_at TEXT
);

CREATE TABLE gorilla_runs (
  seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  gorilla TEXT NOT NULL,
  trigger TEXT NOT NULL CHECK (trigger IN ('schedule', 'manual', 'catch_up')),
  started_at TEXT NOT NULL,
  finished_at TEXT,
  outcome TEXT NOT NULL CHECK (outcome IN ('running', 'ok', 'failed', 'aborted', 'skipped')),
  input_tokens BIGINT NOT NULL DEFAULT 0,
  output_tokens BIGINT NOT NULL DEFAULT 0,
  output BYTEA,
  error TEXT,
  bout_id TEXT REFERENCES bouts(id),
  CHECK ((outcome = 'running') = (finished_at IS NULL))
);
CREATE INDEX gorilla_runs_newest ON gorilla_runs(gorilla, started_at, seq);
-- At most one running cycle per gorilla, across every daemon sharing the database.
CREATE UNIQUE INDEX gorilla_runs_running ON gorilla_runs(gorilla) WHERE outcome = 'running';

CREATE TABLE troops (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  leader TEXT NOT NULL,
  members JSONB NOT NULL,
  strategy TEXT NOT NULL,
  rotation BIGINT NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL
);

CREATE TABLE troop_tasks (
  seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  troop_id TEXT NOT NULL REFERENCES troops(id),
  task BYTEA NOT NULL,
  strategy TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'running', 'completed', 'failed', 'cancelled')),
  body BYTEA NOT NULL,
  error_code TEXT,
  error_message TEXT,
  partial BOOLEAN NOT NULL DEFAULT FALSE,
  input_tokens BIGINT NOT NULL DEFAULT 0,
  output_tokens BIGINT NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  started_at TEXT,
  finished_at TEXT,
  CHECK ((error_code IS NULL) = (error_message IS NULL))
);
CREATE INDEX troop_tasks_newest ON troop_tasks(troop_id, created_at, seq);
CREATE INDEX troop_tasks_unfinished ON troop_tasks(status) WHERE status IN ('pending', 'running');

CREATE TABLE channel_bouts (
  platform TEXT NOT NULL,
  chat TEXT NOT NULL,
  fighter_id TEXT NOT NULL,
  bout_id TEXT NOT NULL REFERENCES bouts(id),
  updated_at TEXT NOT NULL,
  PRIMARY KEY (platform, chat, fighter_id)
);
`;

/**
 * Version 2, as store-sqlite's 11: who started a bout when it was not a user, 'fighter:<id>' (the
 * bout a fighter's messages to this one run in, one per caller) or 'troop-task:<id>'; NULL for a
 * user's bout, and only those are the latest bout a message without a bout continues.
 */
export const BOUT_ORIGINS = `
ALTER TABLE bouts ADD COLUMN origin TEXT;
CREATE INDEX bouts_fighter_origin ON bouts(fighter_id, origin, updated_at);
`;

/**
 * Version 3, as store-sqlite's 12: every channel delivery taken in (so one replayed after a restart
 * is still refused; pruned by age), and the chats that reached a fighter through an allowed sender
 * (where its channel_notify may post).
 */
export const CHANNEL_DELIVERIES = `
CREATE TABLE channel_deliveries (
  platform TEXT NOT NULL,
  delivery_id TEXT NOT NULL,
  seen_at TEXT NOT NULL,
  PRIMARY KEY (platform, delivery_id)
);
CREATE INDEX channel_deliveries_seen ON channel_deliveries(seen_at);
CREATE TABLE channel_chats (
  platform TEXT NOT NULL,
  chat TEXT NOT NULL,
  fighter_id TEXT NOT NULL,
  first_at TEXT NOT NULL,
  last_at TEXT NOT NULL,
  PRIMARY KEY (fighter_id, platform, chat)
);
`;

/**
 * Version 4: fighter names and Idempotency-Keys leave the plaintext. Each becomes an HMAC (cipher.ts
 * `mac`) for the lookups and uniqueness that need only equality, beside the value sealed, for display
 * and so that a rekey can compute the HMAC again under the new key. The plain columns stay, nullable,
 * until names.ts has moved their rows over once the key is known (SQL alone has no key); new rows
 * leave them NULL.
 */
export const SEALED_NAMES = `
ALTER TABLE fighters ADD COLUMN name_mac BYTEA, ADD COLUMN name_sealed BYTEA, ALTER COLUMN name DROP NOT NULL;
DROP INDEX fighters_live_name;
CREATE UNIQUE INDEX fighters_live_name_mac ON fighters(name_mac) WHERE killed_at IS NULL;

ALTER TABLE idempotency DROP CONSTRAINT idempotency_pkey;
ALTER TABLE idempotency ADD COLUMN key_mac BYTEA, ADD COLUMN key_sealed BYTEA, ALTER COLUMN key DROP NOT NULL;
CREATE UNIQUE INDEX idempotency_key_mac ON idempotency(key_mac);

ALTER TABLE creeds DROP CONSTRAINT creeds_pkey;
ALTER TABLE creeds ADD COLUMN fighter_mac BYTEA, ADD COLUMN fighter_sealed BYTEA, ALTER COLUMN fighter_name DROP NOT NULL;
CREATE UNIQUE INDEX creeds_fighter_mac ON creeds(fighter_mac);

ALTER TABLE relationships DROP CONSTRAINT relationships_pkey;
ALTER TABLE relationships ADD COLUMN fighter_mac BYTEA, ADD COLUMN fighter_sealed BYTEA,
  ADD COLUMN other_mac BYTEA, ADD COLUMN other_sealed BYTEA,
  ALTER COLUMN fighter_name DROP NOT NULL, ALTER COLUMN other DROP NOT NULL;
DROP INDEX relationships_recent;
CREATE UNIQUE INDEX relationships_pair_mac ON relationships(fighter_mac, other_mac);
CREATE INDEX relationships_recent_mac ON relationships(fighter_mac, last_contact);
`;

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
