/**
 * The Store over an open, migrated connection: fighters, bouts, messages and summaries here, the
 * rest in a module each. Every statement is prepared once per store, when it is created (or, for
 * the collections' queries, on first use), and never again: see retain.ts.
 */
import Database from "better-sqlite3-multiple-ciphers";
import type { BoutRecord, BoutSummary, FighterManifest, FighterRow } from "../../sdk/index.js";
import { SparError } from "../../sdk/index.js";
import { createCollectionRows } from "./collections.js";
import { type ListedMessageDbRow, MESSAGE_COLUMNS, toStoredMessage } from "./message-rows.js";
import { createNonces } from "./nonces.js";
import type { StoreData } from "./sync-store.js";
import { createTurns } from "./turns.js";
import { createUsage } from "./usage.js";

interface FighterDbRow {
  id: string;
  name: string;
  manifest: string;
  created_at: string;
}

const BOUT_COLUMNS = "b.id, b.fighter_id, b.created_at, b.updated_at, b.message_count, b.origin";

type BoutDbRow = Omit<BoutRecord, "origin"> & { origin: string | null };

/** A bout as the contract has it: `origin` only on a bout a fighter or a troop started. */
function toBout(row: BoutDbRow): BoutRecord;
function toBout(row: BoutDbRow | undefined): BoutRecord | undefined;
function toBout(row: BoutDbRow | undefined): BoutRecord | undefined {
  if (!row) return undefined;
  const { origin, ...bout } = row;
  return origin === null ? bout : { ...bout, origin };
}

/** Wraps `db` (open, keyed and migrated) as the Store's data methods; `close()` closes the connection. */
export function createSqliteStore(db: Database.Database): StoreData {
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
    boutExists: db.prepare<[string], 1>("SELECT 1 FROM bouts WHERE id = ?").pluck(),
    bout: db.prepare<[string], BoutDbRow>(`SELECT ${BOUT_COLUMNS} FROM bouts b WHERE b.id = ?`),
    // Newest = most recently updated, in both, so latest(f) is always the first of list(f) with its origin.
    latestBout: db.prepare<[string, string | null], BoutDbRow>(
      `SELECT ${BOUT_COLUMNS} FROM bouts b WHERE b.fighter_id = ? AND b.origin IS ? ORDER BY b.updated_at DESC, b.rowid DESC LIMIT 1`,
    ),
    bouts: db.prepare<[string], BoutDbRow>(
      `SELECT ${BOUT_COLUMNS} FROM bouts b WHERE b.fighter_id = ? ORDER BY b.updated_at DESC, b.rowid DESC`,
    ),
    messages: db.prepare<[string], ListedMessageDbRow>(
      `SELECT ${MESSAGE_COLUMNS}, compacted FROM messages WHERE bout_id = ? ORDER BY seq`,
    ),
    // A range of the (bout_id, seq) index: only the tail is read, however long the bout.
    tail: db.prepare<[string, string], ListedMessageDbRow>(
      `SELECT ${MESSAGE_COLUMNS}, compacted FROM messages
       WHERE bout_id = ? AND seq > (SELECT compacted_through FROM bouts WHERE id = ?) AND compacted = 0
       ORDER BY seq`,
    ),
    compact: db.prepare<[string, number], void>(
      "UPDATE messages SET compacted = 1 WHERE bout_id = ? AND seq <= ? AND compacted = 0",
    ),
    compactedThrough: db.prepare<[number, string], void>(
      "UPDATE bouts SET compacted_through = max(compacted_through, ?) WHERE id = ?",
    ),
    putSummary: db.prepare<[BoutSummary], void>(
      `INSERT INTO bout_summaries (bout_id, summary, through_seq, updated_at)
       VALUES (@bout_id, @summary, @through_seq, @updated_at)
       ON CONFLICT (bout_id) DO UPDATE SET summary = excluded.summary,
         through_seq = excluded.through_seq, updated_at = excluded.updated_at`,
    ),
    summary: db.prepare<[string], BoutSummary>(
      "SELECT bout_id, summary, through_seq, updated_at FROM bout_summaries WHERE bout_id = ?",
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

  // Truncation (no summary) leaves an earlier summary as it was: it still covers what it covered.
  const compact = db.transaction((boutId: string, throughSeq: number, summary: string | undefined) => {
    requireBout(boutId);
    const marked = s.compact.run(boutId, throughSeq).changes;
    s.compactedThrough.run(throughSeq, boutId);
    if (summary !== undefined) {
      s.putSummary.run({ bout_id: boutId, summary, through_seq: throughSeq, updated_at: now() });
    }
    return marked;
  });

  const usage = createUsage(db);
  const turns = createTurns(db, {
    now,
    requireLiveFighter,
    bout: (id) => toBout(s.bout.get(id)),
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
      get: (id) => toBout(s.bout.get(id)),
      latest: (fighterId, origin) => toBout(s.latestBout.get(fighterId, origin ?? null)),
      list: (fighterId) => s.bouts.all(fighterId).map((row) => toBout(row)),
    },
    messages: {
      list: (boutId) => s.messages.all(boutId).map(toStoredMessage),
      tail: (boutId) => s.tail.all(boutId, boutId).map(toStoredMessage),
      compact: (boutId, throughSeq, summary) => compact.immediate(boutId, throughSeq, summary),
    },
    summaries: {
      get: (boutId) => s.summary.get(boutId),
    },
    ...turns,
    usage,
    nonces: createNonces(db),
    collectionRows: createCollectionRows(db, now),
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

function isUniqueViolation(err: unknown): boolean {
  return (
    err instanceof Database.SqliteError &&
    (err.code === "SQLITE_CONSTRAINT_UNIQUE" || err.code === "SQLITE_CONSTRAINT_PRIMARYKEY")
  );
}
