/**
 * Turns a full disk cut short. A turn is several transactions (its begin, its steps, its end), so a
 * full disk can refuse its end after its begin was stored: the client is told STORAGE_FULL (507),
 * but the turn would stay `running`, and a retry with the same Idempotency-Key would meet "still
 * running" until a restart. Such a turn is settled here, as soon as the disk takes a write again:
 * - holding only its user message (nothing ran), it is undone: the turn, its message and its
 *   Idempotency-Key record go, so the 507 told the truth and a retry with the key runs it afresh;
 * - holding steps (a tool ran), it ends `failed` with STORAGE_FULL and that reply, like any failed
 *   turn, since a tool that ran is never forgotten and a retry must not run it twice.
 */
import type Database from "better-sqlite3-multiple-ciphers";
import type { StoredReply } from "../../sdk/index.js";
import { isStorageFull } from "./storage-full.js";

/** The turns a full disk left `running`, and how they are settled. */
export interface RefusedTurns {
  /** Notes a turn whose step or end a full disk refused. */
  refuse(turnId: string): void;
  /**
   * Whether `turnId` waits to be settled or was settled lately: the kernel's later end of it (its
   * failure, recorded after the refused step) is taken as done, never run against a turn undone.
   */
  has(turnId: string): boolean;
  /** How many wait. */
  readonly pending: number;
  /**
   * Settles each waiting turn in its own transaction (call it outside any open transaction); one the
   * disk still refuses keeps waiting. Answers whether anything was written.
   */
  settle(): boolean;
}

/** How many settled turns are remembered (see `has`). */
const KEEP_SETTLED = 1000;

const ERROR = {
  code: "STORAGE_FULL",
  message: "the disk was full; the turn's end could not be stored",
} as const;

/**
 * Keeps the refused turns of the database behind `db`.
 *
 * @example
 * const refused = createRefusedTurns(db, () => new Date().toISOString());
 * refused.refuse(turnId); // its end failed with SQLITE_FULL
 * if (refused.settle()) sync.wrote(); // later, with room again
 */
export function createRefusedTurns(db: Database.Database, now: () => string): RefusedTurns {
  const waiting = new Set<string>();
  /** Settled lately, oldest first; a few are enough, since the kernel ends a turn right after. */
  const settled = new Set<string>();
  const s = {
    turn: db.prepare<[string], { status: string; bout_id: string }>(
      "SELECT status, bout_id FROM turns WHERE id = ?",
    ),
    steps: db
      .prepare<[string], number>("SELECT count(*) FROM messages WHERE turn_id = ? AND role <> 'user'")
      .pluck(),
    dropMessages: db.prepare<[string], void>("DELETE FROM messages WHERE turn_id = ?"),
    dropKey: db.prepare<[string], void>("DELETE FROM idempotency WHERE turn_id = ?"),
    dropTurn: db.prepare<[string], void>("DELETE FROM turns WHERE id = ?"),
    uncount: db.prepare<[number, string], void>(
      "UPDATE bouts SET message_count = max(message_count - ?, 0) WHERE id = ?",
    ),
    fail: db.prepare<[string, string, string, string], void>(
      `UPDATE turns SET status = 'failed', error_code = ?, error_message = ?, finished_at = ?
       WHERE id = ? AND status = 'running'`,
    ),
    reply: db.prepare<[string, string], void>("UPDATE idempotency SET reply = ? WHERE turn_id = ?"),
  };

  const settleOne = db.transaction((turnId: string): boolean => {
    const turn = s.turn.get(turnId);
    if (turn?.status !== "running") return false;
    if ((s.steps.get(turnId) ?? 0) === 0) {
      s.dropKey.run(turnId);
      const messages = s.dropMessages.run(turnId).changes;
      s.dropTurn.run(turnId);
      s.uncount.run(messages, turn.bout_id);
      return true;
    }
    s.fail.run(ERROR.code, ERROR.message, now(), turnId);
    const reply: StoredReply = { ok: false, error: { ...ERROR } };
    s.reply.run(JSON.stringify(reply), turnId);
    return true;
  });

  return {
    refuse: (turnId) => void waiting.add(turnId),
    has: (turnId) => waiting.has(turnId) || settled.has(turnId),
    get pending() {
      return waiting.size;
    },
    settle() {
      let wrote = false;
      for (const turnId of [...waiting]) {
        try {
          wrote = settleOne.immediate(turnId) || wrote;
          waiting.delete(turnId);
          settled.add(turnId);
          for (const old of settled) {
            if (settled.size <= KEEP_SETTLED) break;
            settled.delete(old);
          }
        } catch (err) {
          // Still full: it waits for the next try. Anything else: the next start settles it
          // (a turn left running is ended INTERRUPTED there), so it is let go.
          if (!isStorageFull(err)) waiting.delete(turnId);
        }
      }
      return wrote;
    },
  };
}
