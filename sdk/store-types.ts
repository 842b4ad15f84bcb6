/**
 * The storage substrate's interface and records. One store plugin provides it; the kernel is its
 * only direct user (plugins reach data through RingServices).
 */

import type { CollectionStore } from "./collections.js";
import type {
  BoutSummary,
  IdempotencyRecord,
  StoreCheck,
  StoreHealth,
  TurnEnd,
  TurnRecord,
  TurnStart,
  UsageGroup,
  UsageQuery,
  UsageRecord,
  UsageSummary,
} from "./store-rows.js";
import type { BoutRecord, ChatMessage, FighterRow, StoredMessage, TaintSource } from "./types.js";

export type * from "./store-rows.js";

/**
 * The storage substrate. Every method but `health` returns a promise, so a store that talks to a
 * server (PostgreSQL) implements the same interface as the embedded one. `test/contract/store.test.ts`
 * is the suite every store plugin passes.
 *
 * Durability: a write's promise resolves once the write is durable (on disk, surviving a power
 * loss), except a turn's own writes (`turns.begin`, `append`, `finish`), which resolve once
 * committed; `durable()` then makes them durable. A store may share one flush among many writes.
 */
/**
 * Which usage rows count against a budget: all (global), a fighter's (`fighter_id`), one origin's
 * (`gorilla:nightly`), or every origin under a prefix (`channel:telegram:`).
 */
export interface UsageSpentFilter {
  fighter_id?: string;
  origin?: string;
  origin_prefix?: string;
}

export interface Store {
  /** Answered from memory, never by reading the database: health checks call it on every probe. */
  health(): StoreHealth;
  /**
   * The quick integrity check started when the store opened (off the main thread, so opening stays
   * fast), once it has finished. Calling it again returns the same outcome; it does not check again.
   */
  integrity(): Promise<StoreCheck>;
  /** Resolves once every write committed before the call is durable. */
  durable(): Promise<void>;
  /**
   * A consistent snapshot of the whole database, taken while it is in use, written to `destination`
   * (which must not exist), encrypted with the same key. Returns its size and schema version.
   */
  backup(destination: string): Promise<{ bytes: number; schema_version: number }>;
  /**
   * Re-encrypts the database under the key derived from `masterSecret`, in place. Only with no
   * other connection open (the daemon stopped). An interruption leaves the old or the new key
   * working, never neither. The caller keeps and zeroizes the secret.
   */
  rekey(masterSecret: Buffer): Promise<void>;
  readonly fighters: {
    insert(row: FighterRow): Promise<void>;
    list(): Promise<FighterRow[]>;
    get(id: string): Promise<FighterRow | undefined>;
    getByName(name: string): Promise<FighterRow | undefined>;
    /** Marks the fighter killed: it leaves the registry, its bouts and messages stay on disk. */
    kill(id: string): Promise<boolean>;
  };
  readonly bouts: {
    get(id: string): Promise<BoutRecord | undefined>;
    /**
     * The fighter's most recently updated bout of `origin` (`BoutRecord.origin`); without one, of
     * its user's bouts only, so a bout another fighter or a troop started is never what a user's
     * message without a bout continues.
     */
    latest(fighterId: string, origin?: string): Promise<BoutRecord | undefined>;
    list(fighterId: string): Promise<BoutRecord[]>;
  };
  readonly turns: {
    /**
     * Starts a turn: the bout (created when none is named), the turn (`running`) and its user
     * message, with the idempotency record if any, in one transaction. A key already recorded is
     * CONFLICT. Committed without waiting for the disk (see `durable()`).
     */
    begin(start: TurnStart): Promise<{ turn: TurnRecord; bout: BoutRecord; bout_created: boolean }>;
    /** A step of a running turn (an assistant message, a tool result), in order; no disk wait. */
    append(turnId: string, messages: ChatMessage[]): Promise<StoredMessage[]>;
    /**
     * Ends a running turn: final messages, status, usage and the idempotent reply, in one
     * transaction, committed without waiting for the disk (see `durable()`).
     */
    finish(turnId: string, end: TurnEnd): Promise<TurnRecord>;
    get(turnId: string): Promise<TurnRecord | undefined>;
    /** The bout's turns, oldest first. */
    list(boutId: string): Promise<TurnRecord[]>;
    /** The bout's turns that did not complete (running, awaiting_approval, failed, cancelled), oldest first. */
    unfinished(boutId: string): Promise<TurnRecord[]>;
    /**
     * A running turn waits for an approval: `awaiting_approval`, with the taint it has taken in so far
     * (the first TURN_TAINT_KEPT). It takes no steps while it waits; `abandon` leaves it alone, so it
     * survives a restart. CONFLICT when the turn is not running.
     */
    pause(turnId: string, taint: readonly TaintSource[]): Promise<TurnRecord>;
    /** A turn `awaiting_approval` runs again (`running`). CONFLICT when it is not waiting. */
    resume(turnId: string): Promise<TurnRecord>;
    /** Every turn `awaiting_approval`, oldest first: what a starting daemon resumes. */
    awaiting(): Promise<TurnRecord[]>;
    /**
     * Turns left `running` (by a stopped daemon; with `fighterId`, that fighter's only, by a node
     * whose lease lapsed) become `failed` with `error`; returns how many. Their later writes are
     * refused (CONFLICT): `append` and `finish` take running turns only.
     */
    abandon(error: { code: string; message: string }, fighterId?: string): Promise<number>;
  };
  readonly messages: {
    /** Every message of the bout in order, compacted ones included (and marked). */
    list(boutId: string): Promise<StoredMessage[]>;
    /**
     * The messages compaction has not replaced, in order: what a prompt is built from. Reads only
     * those, however long the bout.
     */
    tail(boutId: string): Promise<StoredMessage[]>;
    /**
     * Marks messages with `seq <= throughSeq` compacted and stores the summary that replaces them
     * (none for truncation), in one transaction. Returns how many were newly marked.
     */
    compact(boutId: string, throughSeq: number, summary: string | undefined): Promise<number>;
  };
  readonly summaries: {
    get(boutId: string): Promise<BoutSummary | undefined>;
  };
  readonly idempotency: {
    get(key: string): Promise<IdempotencyRecord | undefined>;
    /** Forgets records created before `before` (ISO time); returns how many. */
    purge(before: string): Promise<number>;
  };
  readonly nonces: {
    /**
     * Records a nonce for a key until `expiresAt` (unix seconds); false when it was already seen and
     * has not expired. Forgets expired nonces as it goes.
     */
    claim(keyId: string, nonce: string, expiresAt: number, now: number): Promise<boolean>;
  };
  readonly usage: {
    /** Records one model call (each call of a turn, as it returns). */
    record(entry: UsageRecord): Promise<void>;
    summary(fighterId: string): Promise<UsageSummary[]>;
    /**
     * The ledger summed per group over a time range, in the database (GROUP BY over the `at`
     * range), ordered by key. A group has at least one call.
     */
    query(query: UsageQuery): Promise<UsageGroup[]>;
    /** What the calls since `since` (ISO) that pass `filter` cost and used: a budget's spend, re-read. */
    spent(filter: UsageSpentFilter & { since: string }): Promise<{ cost_micros: number; tokens: number }>;
  };
  /** Every plugin's collections (`api.data`), in this store's database, with its encryption and durability. */
  readonly collections: CollectionStore;
  close(): Promise<void>;
}
