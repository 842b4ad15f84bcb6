/**
 * Turns, their messages, and the Idempotency-Key records that point at them. A turn's steps and its
 * end are committed as they happen without waiting for the disk (store.ts lists them as deferred);
 * the kernel awaits `store.durable()` before it acknowledges the turn, and that one flush of the WAL
 * makes every one of them durable, since WAL frames are appended in order (durability.ts).
 */
import { randomUUID } from "node:crypto";
import type Database from "better-sqlite3-multiple-ciphers";
import type {
  BoutRecord,
  ChatMessage,
  IdempotencyRecord,
  StoredMessage,
  StoredReply,
  TaintSource,
  TurnEnd,
  TurnRecord,
  TurnStart,
} from "../../sdk/index.js";
import { SparError, TURN_TAINT_KEPT } from "../../sdk/index.js";
import { MESSAGE_COLUMNS, type MessageDbRow, toMessageRow, toStoredMessage } from "./message-rows.js";
import type { StoreData } from "./sync-store.js";

interface TurnDbRow {
  id: string;
  bout_id: string;
  fighter_id: string;
  status: TurnRecord["status"];
  error_code: string | null;
  error_message: string | null;
  started_at: string;
  finished_at: string | null;
  input_tokens: number;
  output_tokens: number;
  iterations: number;
  model: string | null;
  stop_reason: string | null;
  taint: string | null;
}

interface IdempotencyDbRow {
  key: string;
  request_hash: string;
  fighter_id: string;
  turn_id: string;
  created_at: string;
  reply: string | null;
}

const TURN_COLUMNS =
  "id, bout_id, fighter_id, status, error_code, error_message, started_at, finished_at, input_tokens, output_tokens, iterations, model, stop_reason, taint";

export interface TurnDeps {
  now: () => string;
  requireLiveFighter(fighterId: string): void;
  bout(boutId: string): BoutRecord | undefined;
}

export function createTurns(
  db: Database.Database,
  deps: TurnDeps,
): { turns: StoreData["turns"]; idempotency: StoreData["idempotency"] } {
  const { now } = deps;
  const s = {
    insertBout: db.prepare<[string, string, string, string, string | null], void>(
      "INSERT INTO bouts (id, fighter_id, created_at, updated_at, origin) VALUES (?, ?, ?, ?, ?)",
    ),
    touchBout: db.prepare<[string, number, string], void>(
      "UPDATE bouts SET updated_at = ?, message_count = message_count + ? WHERE id = ?",
    ),
    maxSeq: db
      .prepare<[string], number>("SELECT coalesce(max(seq), 0) FROM messages WHERE bout_id = ?")
      .pluck(),
    insertMessage: db.prepare<[MessageDbRow], void>(
      `INSERT INTO messages (${MESSAGE_COLUMNS}) VALUES
        (@id, @bout_id, @seq, @role, @content, @tool_calls, @tool_call_id, @name, @is_error, @created_at, @turn_id)`,
    ),
    insertTurn: db.prepare<[string, string, string, string], void>(
      "INSERT INTO turns (id, bout_id, fighter_id, status, started_at) VALUES (?, ?, ?, 'running', ?)",
    ),
    turn: db.prepare<[string], TurnDbRow>(`SELECT ${TURN_COLUMNS} FROM turns WHERE id = ?`),
    turns: db.prepare<[string], TurnDbRow>(
      `SELECT ${TURN_COLUMNS} FROM turns WHERE bout_id = ? ORDER BY started_at, rowid`,
    ),
    unfinished: db.prepare<[string], TurnDbRow>(
      `SELECT ${TURN_COLUMNS} FROM turns WHERE bout_id = ? AND status <> 'completed' ORDER BY started_at, rowid`,
    ),
    endTurn: db.prepare<
      [
        {
          id: string;
          status: string;
          error_code: string | null;
          error_message: string | null;
          finished_at: string;
          input_tokens: number;
          output_tokens: number;
          iterations: number;
          model: string | null;
          stop_reason: string | null;
          taint: string | null;
        },
      ],
      void
    >(
      `UPDATE turns SET status = @status, error_code = @error_code, error_message = @error_message,
         finished_at = @finished_at, input_tokens = @input_tokens, output_tokens = @output_tokens,
         iterations = @iterations, model = @model, stop_reason = @stop_reason,
         taint = coalesce(@taint, taint)
       WHERE id = @id AND status = 'running'`,
    ),
    setStatus: db.prepare<[string, string | null, string, string], void>(
      "UPDATE turns SET status = ?, taint = coalesce(?, taint) WHERE id = ? AND status = ?",
    ),
    awaiting: db.prepare<[], TurnDbRow>(
      `SELECT ${TURN_COLUMNS} FROM turns WHERE status = 'awaiting_approval' ORDER BY started_at, rowid`,
    ),
    running: db.prepare<[], TurnDbRow>(`SELECT ${TURN_COLUMNS} FROM turns WHERE status = 'running'`),
    runningOf: db.prepare<[string], TurnDbRow>(
      `SELECT ${TURN_COLUMNS} FROM turns WHERE status = 'running' AND fighter_id = ?`,
    ),
    insertKey: db.prepare<[string, string, string, string, string], void>(
      "INSERT INTO idempotency (key, request_hash, fighter_id, turn_id, created_at) VALUES (?, ?, ?, ?, ?)",
    ),
    keyOf: db.prepare<[string], IdempotencyDbRow>(
      "SELECT key, request_hash, fighter_id, turn_id, created_at, reply FROM idempotency WHERE key = ?",
    ),
    replyFor: db.prepare<[string, string], void>("UPDATE idempotency SET reply = ? WHERE turn_id = ?"),
    purge: db.prepare<[string], void>("DELETE FROM idempotency WHERE created_at < ?"),
  };

  /** Appends messages to the bout under the turn, seq after seq; inside the caller's transaction. */
  function insert(turn: { id: string; bout_id: string }, messages: ChatMessage[]): StoredMessage[] {
    if (messages.length === 0) return [];
    const createdAt = now();
    let seq = s.maxSeq.get(turn.bout_id) ?? 0;
    const rows = messages.map((message) => {
      seq += 1;
      const row = toMessageRow(message, {
        id: randomUUID(),
        bout_id: turn.bout_id,
        seq,
        created_at: createdAt,
        turn_id: turn.id,
      });
      s.insertMessage.run(row);
      return toStoredMessage(row);
    });
    s.touchBout.run(createdAt, rows.length, turn.bout_id);
    return rows;
  }

  function runningTurn(turnId: string, status: TurnRecord["status"] = "running"): TurnDbRow {
    const row = s.turn.get(turnId);
    if (!row) throw new SparError("NOT_FOUND", `no turn with id ${turnId}`);
    if (row.status !== status)
      throw new SparError(
        "CONFLICT",
        status === "running"
          ? `turn ${turnId} is not running (${row.status})`
          : `turn ${turnId} is not ${status} (${row.status})`,
      );
    return row;
  }

  /** Moves a turn from `from` to `to` (pause and resume), with its taint so far when given. */
  const move = db.transaction(
    (
      turnId: string,
      from: TurnRecord["status"],
      to: TurnRecord["status"],
      taint?: readonly TaintSource[],
    ) => {
      runningTurn(turnId, from);
      s.setStatus.run(to, taintJson(taint), turnId, from);
      return toTurn(s.turn.get(turnId) as TurnDbRow);
    },
  );

  const begin = db.transaction((start: TurnStart) => {
    deps.requireLiveFighter(start.fighter_id);
    let bout = start.bout_id ? deps.bout(start.bout_id) : undefined;
    if (start.bout_id && (!bout || bout.fighter_id !== start.fighter_id)) {
      throw new SparError("BOUT_NOT_FOUND", `fighter ${start.fighter_id} has no bout ${start.bout_id}`);
    }
    const at = now();
    if (!bout) {
      const id = randomUUID();
      s.insertBout.run(id, start.fighter_id, at, at, start.origin ?? null);
      bout = { id, fighter_id: start.fighter_id, created_at: at, updated_at: at, message_count: 0 };
    }
    const turnId = randomUUID();
    s.insertTurn.run(turnId, bout.id, start.fighter_id, at);
    if (start.idempotency) {
      if (s.keyOf.get(start.idempotency.key)) {
        throw new SparError("CONFLICT", `the Idempotency-Key ${start.idempotency.key} is already in use`);
      }
      s.insertKey.run(start.idempotency.key, start.idempotency.request_hash, start.fighter_id, turnId, at);
    }
    insert({ id: turnId, bout_id: bout.id }, [start.user]);
    const turn = toTurn(s.turn.get(turnId) as TurnDbRow);
    return { turn, bout: deps.bout(bout.id) as BoutRecord, bout_created: !start.bout_id };
  });

  const append = db.transaction((turnId: string, messages: ChatMessage[]) =>
    insert(runningTurn(turnId), messages),
  );

  const finish = db.transaction((turnId: string, end: TurnEnd) => {
    const turn = runningTurn(turnId);
    insert(turn, end.messages);
    const at = now();
    s.endTurn.run({
      id: turnId,
      status: end.status,
      error_code: end.error?.code ?? null,
      error_message: end.error?.message ?? null,
      finished_at: at,
      input_tokens: end.usage.input_tokens,
      output_tokens: end.usage.output_tokens,
      iterations: end.iterations,
      model: end.model ?? null,
      stop_reason: end.stop_reason ?? null,
      taint: taintJson(end.taint),
    });
    if (end.reply) s.replyFor.run(JSON.stringify(end.reply), turnId);
    return toTurn(s.turn.get(turnId) as TurnDbRow);
  });

  const abandon = db.transaction((error: { code: string; message: string }, fighterId?: string) => {
    const at = now();
    const reply: StoredReply = { ok: false, error };
    const running = fighterId === undefined ? s.running.all() : s.runningOf.all(fighterId);
    for (const turn of running) {
      s.endTurn.run({
        id: turn.id,
        status: "failed",
        error_code: error.code,
        error_message: error.message,
        finished_at: at,
        input_tokens: turn.input_tokens,
        output_tokens: turn.output_tokens,
        iterations: turn.iterations,
        model: turn.model,
        stop_reason: turn.stop_reason,
        taint: null,
      });
      s.replyFor.run(JSON.stringify(reply), turn.id);
    }
    return running.length;
  });

  return {
    turns: {
      // IMMEDIATE takes the write lock before reading max(seq), so the read cannot go stale.
      begin: (start) => begin.immediate(start),
      append: (turnId, messages) => append.immediate(turnId, messages),
      finish: (turnId, end) => finish.immediate(turnId, end),
      get: (turnId) => {
        const row = s.turn.get(turnId);
        return row ? toTurn(row) : undefined;
      },
      list: (boutId) => s.turns.all(boutId).map(toTurn),
      unfinished: (boutId) => s.unfinished.all(boutId).map(toTurn),
      abandon: (error, fighterId) => abandon.immediate(error, fighterId),
      pause: (turnId, taint) => move.immediate(turnId, "running", "awaiting_approval", taint),
      resume: (turnId) => move.immediate(turnId, "awaiting_approval", "running"),
      awaiting: () => s.awaiting.all().map(toTurn),
    },
    idempotency: {
      get(key) {
        const row = s.keyOf.get(key);
        return row ? toIdempotency(row) : undefined;
      },
      purge: (before) => s.purge.run(before).changes,
    },
  };
}

function toTurn(row: TurnDbRow): TurnRecord {
  return {
    id: row.id,
    bout_id: row.bout_id,
    fighter_id: row.fighter_id,
    status: row.status,
    ...(row.error_code ? { error: { code: row.error_code, message: row.error_message ?? "" } } : {}),
    started_at: row.started_at,
    ...(row.finished_at ? { finished_at: row.finished_at } : {}),
    usage: { input_tokens: row.input_tokens, output_tokens: row.output_tokens },
    iterations: row.iterations,
    ...(row.model ? { model: row.model } : {}),
    ...(row.stop_reason ? { stop_reason: row.stop_reason } : {}),
    ...(row.taint ? { taint: JSON.parse(row.taint) as TaintSource[] } : {}),
  };
}

/** The first sources of a turn's taint, as its column keeps them; null when none (the column stays). */
function taintJson(taint: readonly TaintSource[] | undefined): string | null {
  return taint?.length ? JSON.stringify(taint.slice(0, TURN_TAINT_KEPT)) : null;
}

function toIdempotency(row: IdempotencyDbRow): IdempotencyRecord {
  return {
    key: row.key,
    request_hash: row.request_hash,
    fighter_id: row.fighter_id,
    turn_id: row.turn_id,
    created_at: row.created_at,
    ...(row.reply ? { reply: JSON.parse(row.reply) as StoredReply } : {}),
  };
}
