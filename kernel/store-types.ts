/**
 * The storage substrate's interface and records. One store plugin provides it; the kernel is its
 * only direct user (plugins reach data through RingServices).
 */

import type {
  GorillaDesired,
  GorillaRunEnd,
  GorillaRunRecord,
  GorillaRunTrigger,
  GorillaState,
  RecordedError,
  TroopRecord,
  TroopTaskRecord,
} from "./store-records.js";
import type { BoutRecord, ChatMessage, FighterRow, StoredMessage, Usage } from "./types.js";

export type * from "./store-records.js";

export interface MemoryRecord {
  id: string;
  fighter_id: string;
  key: string;
  value: string;
  /** Relevance at `scored_at`; decays as score0 · e^(−rate · days since scored_at). */
  score0: number;
  scored_at: string;
  created_at: string;
}

/**
 * A message a fighter scheduled for itself: once at `next_run_at`, or on a cron expression (then
 * `next_run_at` moves on after each run). Kept until removed, run once, or its fighter is gone.
 */
export interface ScheduleRecord {
  id: string;
  fighter_id: string;
  message: string;
  /** A five-field cron expression; absent for a one-time schedule. */
  cron?: string;
  /** IANA time zone the cron expression is read in (default UTC). */
  timezone?: string;
  /** When it runs next (ISO time). */
  next_run_at: string;
  created_at: string;
  last_run_at?: string;
  /** How the last run went: "completed", or the error code it failed with. */
  last_status?: string;
}

/** A memory candidate for a query, with how many query words it contains. */
export type MemoryMatch = MemoryRecord & { matches: number };

/** Something a fighter learned, held with a confidence that decays and is reinforced on repetition. */
export interface CreedObservation {
  text: string;
  /** Confidence at `last_seen`. */
  confidence: number;
  /** How often it was observed. */
  seen: number;
  last_seen: string;
}

export interface CreedCounters {
  bouts: number;
  conversations: number;
  messages: number;
}

/** A fighter's living identity, keyed by fighter name so it survives kill and respawn. */
export interface CreedDocument {
  identity: string;
  traits: string[];
  directives: string[];
  observations: CreedObservation[];
  counters: CreedCounters;
  updated_at: string;
}

export interface Relationship {
  /** The other side: a fighter's name, or a channel user (`<platform>:<user id>`). */
  with: string;
  kind: "fighter" | "user";
  exchanges: number;
  last_contact: string;
  note: string;
}

export interface KgEntity {
  name: string;
  type: string;
}

export interface KgRelation {
  from: string;
  to: string;
  type: string;
}

export interface BoutSummary {
  bout_id: string;
  summary: string;
  /** The summary covers every message with `seq` up to this one. */
  through_seq: number;
  updated_at: string;
}

/** What one fighter spent on one model, summed over every message it answered. */
export interface UsageSummary {
  provider: string;
  model: string;
  requests: number;
  input_tokens: number;
  output_tokens: number;
}

/** Whether the store's data can be trusted. */
export interface StoreHealth {
  /** `corrupt` once any call or the integrity check met a damaged database; it stays so until restart. */
  status: "ok" | "corrupt";
  /**
   * For the operator (logs, `spar doctor`): what is wrong, naming the files, and how to recover.
   * Never for unsigned callers: it holds paths.
   */
  detail?: string;
}

/** The outcome of the integrity check a store runs when it opens. */
export interface StoreCheck extends StoreHealth {
  /** False when the check could not run; `detail` says why, and `status` is what the calls have seen. */
  checked: boolean;
}

/** Where a turn stands: `running` until it ends; the others are final. */
export type TurnStatus = "running" | "completed" | "failed" | "cancelled";

/** One turn of a bout: the user's message and everything the fighter did about it. */
export interface TurnRecord {
  id: string;
  bout_id: string;
  fighter_id: string;
  status: TurnStatus;
  /** Why it did not complete (absent for running and completed turns). */
  error?: { code: string; message: string };
  started_at: string;
  finished_at?: string;
  usage: Usage;
  iterations: number;
  /** The model name the provider reported. */
  model?: string;
  stop_reason?: string;
}

/** What a retry with the same Idempotency-Key gets: the first attempt's result or its error. */
export type StoredReply =
  | { ok: true; result: unknown }
  | { ok: false; error: { code: string; message: string; [extra: string]: unknown } };

export interface IdempotencyRecord {
  key: string;
  /** A hash of what was asked (fighter, message, bout): the same key with another request is a conflict. */
  request_hash: string;
  fighter_id: string;
  turn_id: string;
  created_at: string;
  /** Absent while the turn runs. */
  reply?: StoredReply;
}

export interface TurnStart {
  fighter_id: string;
  /** A bout of the fighter to continue; absent to start a new one. */
  bout_id?: string;
  user: ChatMessage & { role: "user" };
  /** Remembered with the turn, in the same transaction, so a retry finds it. */
  idempotency?: { key: string; request_hash: string };
}

export interface TurnEnd {
  status: Exclude<TurnStatus, "running">;
  error?: { code: string; message: string };
  /** The last step's messages (the final answer, or results for calls left unanswered). */
  messages: ChatMessage[];
  usage: Usage;
  iterations: number;
  model?: string;
  stop_reason?: string;
  /** Where the tokens went: recorded in the fighter's usage when any were spent. */
  provider?: { provider: string; model: string };
  /** Stored for the turn's Idempotency-Key, if it has one. */
  reply?: StoredReply;
}

/**
 * The storage substrate. Every method but `health` returns a promise, so a store that talks to a
 * server (PostgreSQL) implements the same interface as the embedded one. `test/contract/store.test.ts`
 * is the suite every store plugin passes.
 *
 * Durability: a write's promise resolves once the write is durable (on disk, surviving a power
 * loss), except a turn's own writes (`turns.begin`, `append`, `finish`), which resolve once
 * committed; `durable()` then makes them durable. A store may share one flush among many writes.
 */
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
    latest(fighterId: string): Promise<BoutRecord | undefined>;
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
    /** The bout's turns that did not complete (running, failed, cancelled), oldest first. */
    unfinished(boutId: string): Promise<TurnRecord[]>;
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
  readonly memories: {
    /** Stores or replaces the value under `key`; a stored memory starts (or restarts) at score 1. */
    put(fighterId: string, key: string, value: string): Promise<MemoryRecord>;
    /** Memories containing any of `words` in key or value (all of them when `words` is empty). */
    candidates(fighterId: string, words: string[]): Promise<MemoryMatch[]>;
    /**
     * Sets each memory's score0 and scored_at (reinforcement on access). Decay is computed when
     * read, from score0 and scored_at, so nothing rewrites scores as time passes.
     */
    rescore(updates: { id: string; score0: number }[], at: string): Promise<void>;
  };
  readonly creeds: {
    get(fighterName: string): Promise<CreedDocument | undefined>;
    put(fighterName: string, creed: CreedDocument): Promise<void>;
  };
  readonly relationships: {
    list(fighterName: string): Promise<Relationship[]>;
    /** Counts one exchange with `other` (creating the record), at `at`, with a fresh note. */
    record(
      fighterName: string,
      other: { with: string; kind: Relationship["kind"] },
      note: string,
      at: string,
    ): Promise<void>;
  };
  readonly knowledge: {
    /** Adds entities and relations; an entity with the same name and type (any case) is merged. */
    add(
      fighterId: string,
      entities: KgEntity[],
      relations: KgRelation[],
    ): Promise<{ entities_added: number; entities_merged: number; relations_added: number }>;
    /** Entities whose name or type contains any of `words`, each with every relation it takes part in. */
    query(
      fighterId: string,
      words: string[],
      limit: number,
    ): Promise<(KgEntity & { relations: KgRelation[] })[]>;
  };
  readonly nonces: {
    /**
     * Records a nonce for a key until `expiresAt` (unix seconds); false when it was already seen and
     * has not expired. Forgets expired nonces as it goes.
     */
    claim(keyId: string, nonce: string, expiresAt: number, now: number): Promise<boolean>;
  };
  readonly schedules: {
    /** Adds a schedule for a live fighter (FIGHTER_NOT_FOUND otherwise). */
    add(record: ScheduleRecord): Promise<void>;
    /** One fighter's schedules, or everyone's; soonest first. */
    list(fighterId?: string): Promise<ScheduleRecord[]>;
    /** After a run: when it ran, how it went, and when it runs next (none: it is removed). */
    ran(id: string, run: { at: string; status: string; next_run_at?: string }): Promise<void>;
    /** Removes a schedule (only the fighter's own when `fighterId` is given); false when there was none. */
    remove(id: string, fighterId?: string): Promise<boolean>;
  };
  readonly gorillas: {
    /** The state recorded for a gorilla name; undefined when none was (a gorilla starts caged). */
    state(name: string): Promise<GorillaState | undefined>;
    /** Every recorded state, by name. */
    states(): Promise<GorillaState[]>;
    /**
     * Records what the operator asked for; `changed_at` moves only when `desired` changes. Returns
     * the state.
     */
    setDesired(name: string, desired: GorillaDesired): Promise<GorillaState>;
    /** Records a fire at `at` (a name with no state yet is recorded caged). Returns the state. */
    recordFire(name: string, at: string): Promise<GorillaState>;
    readonly runs: {
      /**
       * Starts a run (`running`, started now unless told). A gorilla has at most one running run:
       * a second is CONFLICT (record the fire with `skipped` instead).
       */
      begin(start: {
        gorilla: string;
        trigger: GorillaRunTrigger;
        started_at?: string;
      }): Promise<GorillaRunRecord>;
      /**
       * Ends a running run. NOT_FOUND for an unknown id; CONFLICT when it has already ended (an
       * ended run never changes). `output` and `error` longer than 256 KiB (262,144 bytes) of UTF-8
       * are cut to fit that, marker included: they end with "\n[cut: N bytes in all]".
       */
      finish(id: string, end: GorillaRunEnd): Promise<GorillaRunRecord>;
      /** Records a fire that ran no cycle: outcome `skipped`, started and finished at `at`, `reason` as its error. */
      skipped(skip: {
        gorilla: string;
        at: string;
        reason: string;
        /** Default: "schedule". */
        trigger?: GorillaRunTrigger;
      }): Promise<GorillaRunRecord>;
      get(id: string): Promise<GorillaRunRecord | undefined>;
      /**
       * A gorilla's runs, newest first (by started_at; runs started at the same time, the later
       * recorded first), at most `limit` (an integer ≥ 1). `before` is a run id of that gorilla:
       * the page after it, with no run skipped or repeated however many share a start time
       * (NOT_FOUND once that run is gone).
       */
      list(gorilla: string, page: { limit: number; before?: string }): Promise<GorillaRunRecord[]>;
      /** At start: runs a stopped daemon left `running` become `failed`, "daemon restarted", at `now`. Returns how many. */
      abandon(now: string): Promise<number>;
      /** Keeps the gorilla's newest `keep` runs (and any still running), deletes the rest; returns how many went. */
      prune(gorilla: string, keep: number): Promise<number>;
    };
  };
  readonly troops: {
    /** CONFLICT when the name is taken. */
    create(troop: Omit<TroopRecord, "id" | "created_at">): Promise<TroopRecord>;
    /** By id, or by name. */
    get(idOrName: string): Promise<TroopRecord | undefined>;
    /** Every troop, by name. */
    list(): Promise<TroopRecord[]>;
    /** Deletes the troop with its tasks; false when there was none. */
    remove(id: string): Promise<boolean>;
    /** The troop's rotation counter (round robin), advanced by one at once: the value before. */
    rotate(id: string): Promise<number>;
    readonly tasks: {
      /** Records a task `pending` (TROOP_NOT_FOUND for an unknown troop). */
      create(task: { troop_id: string; task: string; strategy: string }): Promise<TroopTaskRecord>;
      /** Writes a task's state as it stands (everything but its id, troop, task, strategy and created_at); NOT_FOUND when gone. */
      save(task: TroopTaskRecord): Promise<void>;
      get(id: string): Promise<TroopTaskRecord | undefined>;
      /** A troop's tasks, newest first, at most `limit`; `before` is a task id of that troop (the page after it). */
      list(troopId: string, page: { limit: number; before?: string }): Promise<TroopTaskRecord[]>;
      /** At start: tasks a stopped daemon left pending or running become `failed` with `error`, at `now`. How many. */
      abandon(error: RecordedError, now: string): Promise<number>;
    };
  };
  /** The bout each channel chat talks to its fighter in (one conversation per chat). */
  readonly channelBouts: {
    get(platform: string, chat: string, fighterId: string): Promise<string | undefined>;
    /** BOUT_NOT_FOUND for an unknown bout. */
    set(platform: string, chat: string, fighterId: string, boutId: string): Promise<void>;
  };
  readonly usage: {
    record(
      fighterId: string,
      entry: { provider: string; model: string; input_tokens: number; output_tokens: number },
      at: string,
    ): Promise<void>;
    summary(fighterId: string): Promise<UsageSummary[]>;
  };
  close(): Promise<void>;
}
