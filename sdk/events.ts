import type { FighterStatus, TaintSource, Usage } from "./types.js";

/**
 * Every event kind and its payload. The kernel's are here; a plugin adds its own by declaration
 * merging and lists them in its manifest's `contributes.events` (it may publish no others):
 *
 * @example
 * declare module "spar/sdk" {
 *   interface SparEventMap { "dice.rolled": { fighter_id: string; total: number } }
 * }
 *
 * The spec's FighterSpawned, BoutStarted and the completion event are `fighter.spawned`,
 * `bout.started` and `message.completed`.
 */
export interface SparEventMap {
  "fighter.spawned": { fighter_id: string; name: string };
  "fighter.killed": { fighter_id: string; name: string };
  "fighter.status": { fighter_id: string; status: FighterStatus };
  "fighter.rate_limited": { fighter_id: string; reason: "requests" | "tokens"; retry_after_s: number };
  "bout.started": { fighter_id: string; bout_id: string };
  "message.received": { fighter_id: string; bout_id: string; turn_id: string; from?: string };
  "message.delta": { fighter_id: string; bout_id: string; text: string; request_id?: string };
  "move.called": { fighter_id: string; bout_id: string; name: string; call_id: string };
  "move.result": { fighter_id: string; bout_id: string; name: string; call_id: string; ok: boolean };
  "compaction.applied": {
    fighter_id: string;
    bout_id: string;
    strategy: string;
    compacted: number;
    through_seq: number;
  };
  /** A turn that ended without completing: its steps stay in the bout, with this error. */
  "message.failed": {
    fighter_id: string;
    bout_id: string;
    turn_id: string;
    status: "failed" | "cancelled";
    error: { code: string; message: string };
  };
  /** A channel delivered a message from an allowed sender to its fighter. */
  "channel.inbound": { platform: string; chat: string; sender: string; fighter_id: string };
  /** A channel posted a reply (or a `channel_notify` message) to the platform, in `parts` messages. */
  "channel.outbound": { platform: string; chat: string; parts: number; fighter_id?: string };
  /**
   * Untrusted content entered a turn (its message came from a stranger or a tainted turn, or a
   * move's result brought a web page, an MCP answer, a file the fighter did not write in): the turn
   * is tainted from here on. Once per source, in order; the turn's result lists them all (`taint`).
   */
  "turn.tainted": { fighter_id: string; bout_id: string; turn_id: string; source: TaintSource };
  /** Bookkeeping after a committed turn failed (a `turn.end` tap): the reply still stands. */
  "turn.hook_failed": { fighter_id: string; bout_id: string; turn_id: string; hook: string; error: string };
  /** A budget's spend crossed `[budgets] warn_at_percent` of its limit: once per budget and period. */
  "budget.warning": BudgetEventFields & { percent: number };
  /** A model call was refused by a budget (`action` stop), or asked about (`ask`). */
  "budget.exceeded": BudgetEventFields & {
    fighter_id: string;
    turn_id: string;
    origin: string;
    action: "stopped" | "asked";
  };
  "message.completed": {
    fighter_id: string;
    bout_id: string;
    turn_id: string;
    usage: Usage;
    iterations: number;
    model: string;
    stop_reason: string;
  };
}

export type SparEventKind = keyof SparEventMap;

/** A budget as events and `GET /api/v1/budgets` name it: money in currency units, tokens as integers. */
export interface BudgetEventFields {
  /** `<scope>:<name>:<period>` (`fighter:ada:daily`), `global:daily`, `…:daily_tokens` for tokens. */
  budget: string;
  limit: number;
  spent: number;
  unit: "money" | "tokens";
  currency: string;
  resets_at: string;
}

/** One event before it is stamped: its kind and that kind's payload. */
export type SparEventPayload = { [K in SparEventKind]: { kind: K } & SparEventMap[K] }[SparEventKind];

/** The envelope every event travels in: `seq` increases by one per event so a client can resume. */
export type SparEvent = SparEventPayload & { id: string; seq: number; at: string };

export type EventListener = (event: SparEvent) => void;

export interface EventBus {
  /**
   * Stamps the payload with id, seq and time and delivers it to every listener, this node's and, on
   * a cluster bus, every other node's (there, after a round trip, in the cluster's one order).
   */
  publish(payload: SparEventPayload): void;
  /** Listens to every event from now on; returns the function that stops listening. */
  subscribe(listener: EventListener): () => void;
  /** Events with `seq` greater than `since` still in the history (deltas are not kept), oldest first. */
  since(seq: number): Promise<SparEvent[]>;
  /** The seq of the last event delivered to this node's listeners. */
  readonly lastSeq: number;
  /**
   * Resolves once every event this node published before the call has reached its listeners (at
   * once on an in-process bus): a reply sent after it follows its own streamed deltas.
   */
  delivered(): Promise<void>;
}

/** A fighter's quota limits, per `window` (a minute by default). */
export interface QuotaLimits {
  requests_per_minute: number;
  tokens_per_minute: number;
}

/** Tokens held for an admitted turn until it ends and its real usage replaces them. */
export interface Reservation {
  readonly fighterId: string;
  readonly tokens: number;
  /** The bus's own handle for the reservation (a cluster bus keys it in its shared store). */
  readonly id?: string;
}

export type Admission =
  | { ok: true; reservation: Reservation }
  | { ok: false; reason: "requests" | "tokens"; retry_after_s: number };

/**
 * The per-fighter sliding quota windows (DESIGN §4 step 2), kept by the bus so that every node of a
 * cluster counts against the same window.
 */
export interface QuotaWindows {
  /**
   * Admits one request when the fighter's window has room, counting it and reserving
   * `reserveTokens` at once, so concurrent admissions see each other; otherwise says when the
   * window frees. A window with nothing used or reserved admits any one request, however large.
   */
  admit(fighterId: string, limits: QuotaLimits, reserveTokens: number): Promise<Admission>;
  /**
   * The admitted turn is about to run: it may, if the tokens already settled in the window leave
   * room for its reservation (so a burst overshoots by at most the one turn that runs last). On a
   * refusal the reservation is released.
   */
  start(reservation: Reservation, limits: QuotaLimits): Promise<Admission>;
  /** The turn ended: its reservation is released and the tokens it really used count instead. */
  settle(reservation: Reservation, tokens: number): Promise<void>;
  /** Milliseconds until the fighter could be admitted again (0 when it could be now). */
  freesInMs(fighterId: string, limits: QuotaLimits): Promise<number>;
}

/**
 * One line of a budget reservation: the counter `key` (a budget in one period), its `limit`, and the
 * `amount` this call reserves (micro-units of money, or tokens). `seed` is what was spent before the
 * counter existed (read from the usage ledger), given once the counters answered it `missing`.
 */
export interface BudgetLine {
  key: string;
  limit: number;
  amount: number;
  seed?: number;
  /** Reserve even when the line has no room (an approved overrun): counted, never refused. */
  force?: boolean;
  /** When the counter may be forgotten (after its period ends), unix milliseconds. */
  expires_at: number;
}

/** What `BudgetCounters.reserve` answers. */
export type BudgetVerdict =
  | { ok: true }
  /** These counters do not exist yet: reserve again with their `seed`s. */
  | { ok: false; missing: string[] }
  /** The line at `index` had no room: spent and reserved were these. Nothing was reserved. */
  | { ok: false; index: number; spent: number; reserved: number };

/**
 * Budget counters (issue 31), kept by the bus so every node of a cluster counts against one figure.
 * A call reserves its worst case on every line that applies at once, or on none: a line has room
 * while `spent + reserved < limit`, so concurrent calls pass a limit by at most one call's
 * reservation. Settling replaces a reservation by the real amount; releasing drops it.
 */
export interface BudgetCounters {
  reserve(id: string, lines: readonly BudgetLine[]): Promise<BudgetVerdict>;
  /**
   * The call ended: `amounts[i]` is spent on `keys[i]` instead of what `id` reserved there. Answers
   * the indexes whose spend crossed `warnAt[i]` with this settle (each crossing happens once).
   */
  settle(
    id: string,
    keys: readonly string[],
    amounts: readonly number[],
    warnAt: readonly number[],
  ): Promise<number[]>;
  /** The call failed before it cost anything: its reservations are dropped. */
  release(id: string, keys: readonly string[]): Promise<void>;
  /** Spent and reserved per key; null for a counter that does not exist. */
  read(keys: readonly string[]): Promise<({ spent: number; reserved: number } | null)[]>;
}

/** One fighter's turn lease: while a node holds it, no other node runs a turn of that fighter. */
export interface TurnLease {
  /** Grows with every grant of the fighter's lease across the cluster (0 on an in-process bus). */
  readonly fence: number;
  /** Aborted when the lease is lost (it could not be renewed in time): the turn stops. */
  readonly lost: AbortSignal;
  release(): Promise<void>;
}

export interface TurnLeases {
  /** Resolves once this node holds the fighter's lease; rejects with the signal's reason if it aborts first. */
  acquire(fighterId: string, signal: AbortSignal): Promise<TurnLease>;
}

/** What the kernel asks the bus plugin (`[plugins] bus`) for once, at start, before the store opens. */
export interface BusOpenOptions {
  /** Lifecycle events kept for `since` (deltas are never kept). */
  historySize: number;
  /** The quota window, `[quotas] window_s`, in milliseconds. */
  quotaWindowMs: number;
  /** Called when a listener throws: it never stops the others or the publisher. */
  onListenerError(err: unknown, event: SparEvent): void;
}

/**
 * The bus: event fan-out and quota windows. The default, `bus-local`, keeps both in this process; a
 * cluster bus (`bus-redis`) shares them between the nodes.
 */
export interface Bus {
  readonly events: EventBus;
  readonly quotas: QuotaWindows;
  /** Budget counters (issue 31): what every budget has spent and reserved in its current period. */
  readonly budgets: BudgetCounters;
  /**
   * Turn order across nodes. In one process the fighter's own queue already runs one turn at a
   * time, and `bus-local`'s leases are granted at once.
   */
  readonly leases: TurnLeases;
  /**
   * Whether other daemons share this bus (and so the store): then a starting daemon must not fail
   * the running turns it finds (they may be another node's), and the holder of a fighter's lease
   * fails that fighter's orphaned ones instead.
   */
  readonly shared: boolean;
  close(): Promise<void>;
}
