/**
 * The storage substrate's interface and records. One store plugin provides it; the kernel is its
 * only direct user (plugins reach data through RingServices).
 */
import type { BoutRecord, ChatMessage, FighterRow, StoredMessage } from "./types.js";

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

export interface Store {
  /** Answered from memory, never by reading the database: health checks call it on every probe. */
  health(): StoreHealth;
  /**
   * The quick integrity check started when the store opened (off the main thread, so opening stays
   * fast), once it has finished. Calling it again returns the same outcome; it does not check again.
   */
  integrity(): Promise<StoreCheck>;
  readonly fighters: {
    insert(row: FighterRow): void;
    list(): FighterRow[];
    get(id: string): FighterRow | undefined;
    getByName(name: string): FighterRow | undefined;
    /** Marks the fighter killed: it leaves the registry, its bouts and messages stay on disk. */
    kill(id: string): boolean;
  };
  readonly bouts: {
    create(fighterId: string): BoutRecord;
    get(id: string): BoutRecord | undefined;
    latest(fighterId: string): BoutRecord | undefined;
    list(fighterId: string): BoutRecord[];
  };
  readonly messages: {
    /** Appends all messages of one turn in a single durable transaction. */
    append(boutId: string, messages: ChatMessage[]): StoredMessage[];
    /** Every message of the bout in order, compacted ones included (and marked). */
    list(boutId: string): StoredMessage[];
    /**
     * Marks messages with `seq <= throughSeq` compacted and stores the summary that replaces them
     * (none for truncation), in one transaction. Returns how many were newly marked.
     */
    compact(boutId: string, throughSeq: number, summary: string | undefined): number;
  };
  readonly summaries: {
    get(boutId: string): BoutSummary | undefined;
  };
  readonly memories: {
    /** Stores or replaces the value under `key`; a stored memory starts (or restarts) at score 1. */
    put(fighterId: string, key: string, value: string): MemoryRecord;
    /** Memories containing any of `words` in key or value (all of them when `words` is empty). */
    candidates(fighterId: string, words: string[]): MemoryMatch[];
    /** Sets each memory's score0 and scored_at (reinforcement on access). */
    rescore(updates: { id: string; score0: number }[], at: string): void;
    /** Applies decay to every memory of the fighter up to `at`: score0 · e^(−rate · days). */
    decay(fighterId: string, ratePerDay: number, at: string): void;
  };
  readonly creeds: {
    get(fighterName: string): CreedDocument | undefined;
    put(fighterName: string, creed: CreedDocument): void;
  };
  readonly relationships: {
    list(fighterName: string): Relationship[];
    /** Counts one exchange with `other` (creating the record), at `at`, with a fresh note. */
    record(
      fighterName: string,
      other: { with: string; kind: Relationship["kind"] },
      note: string,
      at: string,
    ): void;
  };
  readonly knowledge: {
    /** Adds entities and relations; an entity with the same name and type (any case) is merged. */
    add(
      fighterId: string,
      entities: KgEntity[],
      relations: KgRelation[],
    ): { entities_added: number; entities_merged: number; relations_added: number };
    /** Entities whose name or type contains any of `words`, each with every relation it takes part in. */
    query(fighterId: string, words: string[], limit: number): (KgEntity & { relations: KgRelation[] })[];
  };
  readonly nonces: {
    /**
     * Records a nonce for a key until `expiresAt` (unix seconds); false when it was already seen and
     * has not expired. Forgets expired nonces as it goes.
     */
    claim(keyId: string, nonce: string, expiresAt: number, now: number): boolean;
  };
  readonly usage: {
    record(
      fighterId: string,
      entry: { provider: string; model: string; input_tokens: number; output_tokens: number },
      at: string,
    ): void;
    summary(fighterId: string): UsageSummary[];
  };
  close(): void;
}
