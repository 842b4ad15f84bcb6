/** The records the Store hands back and takes: usage, turns, health. */
import type { ChatMessage, TaintSource, Usage } from "./types.js";

export interface BoutSummary {
  bout_id: string;
  summary: string;
  /** The summary covers every message with `seq` up to this one. */
  through_seq: number;
  updated_at: string;
}

/**
 * What one fighter spent on one model, summed over every model call it made (every message it
 * answered, before the ledger counted calls). `cost_micros` sums the priced calls, null when none
 * was; `unpriced_requests` counts the others.
 */
export interface UsageSummary {
  provider: string;
  model: string;
  requests: number;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  cache_write_tokens: number;
  cost_micros: number | null;
  unpriced_requests: number;
}

/**
 * One model call in the usage ledger: whose turn it was, what the provider reported, and its cost
 * in micro-units of `currency` (lib/pricing.ts), both null when the model is unpriced.
 */
export interface UsageRecord {
  fighter_id: string;
  bout_id?: string;
  turn_id?: string;
  /** Who started the bout (lib/bout-origins.ts): `user`, `channel:…`, `gorilla:…`, `troop-task:…`, `fighter:…`, `schedule`. */
  origin: string;
  provider: string;
  model: string;
  /** ISO time of the call's end. */
  at: string;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  cache_write_tokens: number;
  cost_micros: number | null;
  currency: string | null;
}

/**
 * How `Store.usage.query` groups the ledger: per calendar day (in the zone `UsageQuery.days` gives),
 * per provider and model (`provider/model`), per fighter (its id), per provider, per origin kind
 * (`channel`, `gorilla`, `troop-task`, `fighter`, `schedule`, `user`: what precedes the first colon,
 * so a key is also an `origin` filter) or per exact origin (`channel:telegram:42`). A row written
 * before the ledger kept origins (migration 21) has the origin `unknown`.
 */
export type UsageGrouping = "day" | "model" | "fighter" | "provider" | "origin" | "origin-exact";

/** The UTC offset of a time zone from `from` (ISO UTC) on, in minutes east of UTC. */
export interface ZoneOffset {
  from: string;
  minutes: number;
}

/**
 * What part of the ledger `Store.usage.query` sums: calls with `since <= at < until` (ISO UTC),
 * optionally of one fighter (its id), one origin (exact, or a kind as lib/bout-origins.ts
 * `originMatches` takes it), one provider, one model.
 */
export interface UsageQuery {
  by: UsageGrouping;
  since: string;
  until: string;
  fighter_id?: string;
  origin?: string;
  provider?: string;
  model?: string;
  /**
   * For `by: "day"`: the zone's offsets over the range, oldest first (the first one applies before
   * any later `from` too); a call's day is the date of `at` shifted by the offset in force then.
   * Absent: UTC days.
   */
  days?: ZoneOffset[];
}

/** One group of `Store.usage.query`: its key and the sums of its calls, as `UsageSummary` counts them. */
export interface UsageGroup {
  key: string;
  requests: number;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  cache_write_tokens: number;
  /** The priced calls' cost in micro-units, null when none was priced. */
  cost_micros: number | null;
  unpriced_requests: number;
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

/**
 * Where a turn stands: `running` until it ends, `awaiting_approval` while a call of it waits for an
 * operator's answer (it survives a restart and is resumed); the others are final.
 */
export type TurnStatus = "running" | "awaiting_approval" | "completed" | "failed" | "cancelled";

/** The most taint sources a turn record keeps (the first ones: what tainted it first). */
export const TURN_TAINT_KEPT = 20;

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
  /** The untrusted content the turn took in, first sources first (at most TURN_TAINT_KEPT); absent when none. */
  taint?: TaintSource[];
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
  /** The origin a new bout is recorded with (`BoutRecord.origin`); absent for a user's. Ignored with `bout_id`. */
  origin?: string;
  user: ChatMessage & { role: "user" };
  /** Remembered with the turn, in the same transaction, so a retry finds it. */
  idempotency?: { key: string; request_hash: string };
}

export interface TurnEnd {
  status: Exclude<TurnStatus, "running" | "awaiting_approval">;
  error?: { code: string; message: string };
  /** The last step's messages (the final answer, or results for calls left unanswered). */
  messages: ChatMessage[];
  usage: Usage;
  iterations: number;
  model?: string;
  stop_reason?: string;
  /** Stored for the turn's Idempotency-Key, if it has one. */
  reply?: StoredReply;
  /** The untrusted content the turn took in (the first TURN_TAINT_KEPT are kept). */
  taint?: readonly TaintSource[];
}
