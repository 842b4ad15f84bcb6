/**
 * The Store over an open, migrated connection. Every statement is prepared once, here; rows are
 * mapped to the SDK shapes in one place each so `append` and `list` return identical messages.
 */
import { randomUUID } from "node:crypto";
import Database from "better-sqlite3-multiple-ciphers";
import type {
  BoutRecord,
  ChatMessage,
  FighterManifest,
  FighterRow,
  MemoryRecord,
  Store,
  StoredMessage,
  ToolCall,
} from "../../kernel/sdk.js";
import { SparError } from "../../kernel/sdk.js";
import { createMemorySearch } from "./memory-search.js";

interface FighterDbRow {
  id: string;
  name: string;
  manifest: string;
  created_at: string;
}

interface MessageDbRow {
  id: string;
  bout_id: string;
  seq: number;
  role: ChatMessage["role"];
  content: string;
  tool_calls: string | null;
  tool_call_id: string | null;
  name: string | null;
  is_error: number;
  created_at: string;
}

const BOUT_COLUMNS = `b.id, b.fighter_id, b.created_at, b.updated_at,
  (SELECT count(*) FROM messages m WHERE m.bout_id = b.id) AS message_count`;
const MESSAGE_COLUMNS =
  "id, bout_id, seq, role, content, tool_calls, tool_call_id, name, is_error, created_at";

/** Wraps `db` (open, keyed and migrated) as a Store; `close()` closes the connection. */
export function createSqliteStore(db: Database.Database): Store {
  const now = createClock();
  const s = {
    insertFighter: db.prepare<[FighterDbRow], void>(
      "INSERT INTO fighters (id, name, manifest, created_at) VALUES (@id, @name, @manifest, @created_at)",
    ),
    liveFighters: db.prepare<[], FighterDbRow>(
      "SELECT id, name, manifest, created_at FROM fighters WHERE killed_at IS NULL ORDER BY created_at, rowid",
    ),
    liveFighter: db.prepare<[string], FighterDbRow>(
      "SELECT id, name, manifest, created_at FROM fighters WHERE id = ? AND killed_at IS NULL",
    ),
    liveFighterByName: db.prepare<[string], FighterDbRow>(
      "SELECT id, name, manifest, created_at FROM fighters WHERE name = ? AND killed_at IS NULL",
    ),
    killFighter: db.prepare<[string, string], void>(
      "UPDATE fighters SET killed_at = ? WHERE id = ? AND killed_at IS NULL",
    ),
    insertBout: db.prepare<[string, string, string, string], void>(
      "INSERT INTO bouts (id, fighter_id, created_at, updated_at) VALUES (?, ?, ?, ?)",
    ),
    boutExists: db.prepare<[string], 1>("SELECT 1 FROM bouts WHERE id = ?").pluck(),
    bout: db.prepare<[string], BoutRecord>(`SELECT ${BOUT_COLUMNS} FROM bouts b WHERE b.id = ?`),
    // Newest = most recently updated, in both, so latest(f) is always list(f)[0].
    latestBout: db.prepare<[string], BoutRecord>(
      `SELECT ${BOUT_COLUMNS} FROM bouts b WHERE b.fighter_id = ? ORDER BY b.updated_at DESC, b.rowid DESC LIMIT 1`,
    ),
    bouts: db.prepare<[string], BoutRecord>(
      `SELECT ${BOUT_COLUMNS} FROM bouts b WHERE b.fighter_id = ? ORDER BY b.updated_at DESC, b.rowid DESC`,
    ),
    touchBout: db.prepare<[string, string], void>("UPDATE bouts SET updated_at = ? WHERE id = ?"),
    maxSeq: db
      .prepare<[string], number>("SELECT coalesce(max(seq), 0) FROM messages WHERE bout_id = ?")
      .pluck(),
    insertMessage: db.prepare<[MessageDbRow], void>(
      `INSERT INTO messages (${MESSAGE_COLUMNS}) VALUES
        (@id, @bout_id, @seq, @role, @content, @tool_calls, @tool_call_id, @name, @is_error, @created_at)`,
    ),
    messages: db.prepare<[string], MessageDbRow>(
      `SELECT ${MESSAGE_COLUMNS} FROM messages WHERE bout_id = ? ORDER BY seq`,
    ),
    putMemory: db.prepare<[string, string, string, string, string, string], MemoryRecord>(
      `INSERT INTO memories (id, fighter_id, key, value, created_at, accessed_at) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (fighter_id, key) DO UPDATE SET value = excluded.value, accessed_at = excluded.accessed_at
       RETURNING id, fighter_id, key, value, created_at`,
    ),
  };

  const requireBout = (boutId: string): void => {
    if (!s.boutExists.get(boutId)) throw new SparError("BOUT_NOT_FOUND", `No bout with id ${boutId}`);
  };
  const requireLiveFighter = (fighterId: string): void => {
    if (!s.liveFighter.get(fighterId)) {
      throw new SparError("FIGHTER_NOT_FOUND", `No fighter with id ${fighterId}`);
    }
  };

  const append = db.transaction((boutId: string, messages: ChatMessage[]): StoredMessage[] => {
    requireBout(boutId);
    if (messages.length === 0) return [];
    const createdAt = now();
    let seq = s.maxSeq.get(boutId) ?? 0;
    const rows = messages.map((message) => {
      seq += 1;
      const row = toMessageRow(message, { id: randomUUID(), bout_id: boutId, seq, created_at: createdAt });
      s.insertMessage.run(row);
      return toStoredMessage(row);
    });
    s.touchBout.run(createdAt, boutId);
    return rows;
  });

  return {
    fighters: {
      insert(row) {
        try {
          const { id, name, created_at } = row;
          s.insertFighter.run({ id, name, manifest: JSON.stringify(row.manifest), created_at });
        } catch (err) {
          if (isUniqueViolation(err)) {
            throw new SparError(
              "CONFLICT",
              `A fighter named ${row.name} (or with id ${row.id}) already exists`,
            );
          }
          throw err;
        }
      },
      list: () => s.liveFighters.all().map(toFighterRow),
      get: (id) => optional(s.liveFighter.get(id), toFighterRow),
      getByName: (name) => optional(s.liveFighterByName.get(name), toFighterRow),
      kill: (id) => s.killFighter.run(now(), id).changes > 0,
    },
    bouts: {
      create(fighterId) {
        requireLiveFighter(fighterId);
        const bout = { id: randomUUID(), fighter_id: fighterId, created_at: now(), message_count: 0 };
        s.insertBout.run(bout.id, fighterId, bout.created_at, bout.created_at);
        return { ...bout, updated_at: bout.created_at };
      },
      get: (id) => s.bout.get(id),
      latest: (fighterId) => s.latestBout.get(fighterId),
      list: (fighterId) => s.bouts.all(fighterId),
    },
    messages: {
      // IMMEDIATE takes the write lock before reading max(seq), so the read cannot go stale.
      append: (boutId, messages) => append.immediate(boutId, messages),
      list: (boutId) => s.messages.all(boutId).map(toStoredMessage),
    },
    memories: {
      put(fighterId, key, value) {
        requireLiveFighter(fighterId);
        const at = now();
        const record = s.putMemory.get(randomUUID(), fighterId, key, value, at, at);
        if (!record) throw new SparError("INTERNAL", `memory ${key} was not written`);
        return record;
      },
      search: createMemorySearch(db),
    },
    close() {
      if (db.open) db.close();
    },
  };
}

/**
 * ISO timestamps that strictly increase within a store, so "latest" and "newest first" never depend
 * on two writes landing in the same millisecond.
 */
function createClock(): () => string {
  let last = 0;
  return () => {
    last = Math.max(Date.now(), last + 1);
    return new Date(last).toISOString();
  };
}

function optional<T, R>(value: T | undefined, map: (value: T) => R): R | undefined {
  return value === undefined ? undefined : map(value);
}

function toFighterRow(row: FighterDbRow): FighterRow {
  return { ...row, manifest: JSON.parse(row.manifest) as FighterManifest };
}

type MessageMeta = Pick<MessageDbRow, "id" | "bout_id" | "seq" | "created_at">;

/** The role is stored as given: the table's CHECK, not this code, is what rejects a bad one. */
function toMessageRow(message: ChatMessage, meta: MessageMeta): MessageDbRow {
  const row: MessageDbRow = {
    ...meta,
    role: message.role,
    content: message.content,
    tool_calls: null,
    tool_call_id: null,
    name: null,
    is_error: 0,
  };
  if (message.role === "assistant" && message.tool_calls?.length) {
    row.tool_calls = JSON.stringify(message.tool_calls);
  }
  if (message.role === "tool") {
    row.tool_call_id = message.tool_call_id;
    row.name = message.name;
    row.is_error = message.is_error ? 1 : 0;
  }
  return row;
}

/** Optional fields appear only when they carry something: no `tool_calls: []`, no `is_error: false`. */
function toStoredMessage(row: MessageDbRow): StoredMessage {
  const meta = { id: row.id, bout_id: row.bout_id, seq: row.seq, created_at: row.created_at };
  if (row.role === "assistant") {
    const calls = row.tool_calls ? (JSON.parse(row.tool_calls) as ToolCall[]) : [];
    return calls.length > 0
      ? { role: "assistant", content: row.content, tool_calls: calls, ...meta }
      : { role: "assistant", content: row.content, ...meta };
  }
  if (row.role === "tool") {
    return {
      role: "tool",
      tool_call_id: row.tool_call_id ?? "",
      name: row.name ?? "",
      content: row.content,
      ...(row.is_error ? { is_error: true } : {}),
      ...meta,
    };
  }
  return { role: "user", content: row.content, ...meta };
}

function isUniqueViolation(err: unknown): boolean {
  return (
    err instanceof Database.SqliteError &&
    (err.code === "SQLITE_CONSTRAINT_UNIQUE" || err.code === "SQLITE_CONSTRAINT_PRIMARYKEY")
  );
}
