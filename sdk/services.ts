import type { KeyObject } from "node:crypto";
import type { BudgetCounters } from "./events.js";
import type { SandboxMount, SpendContext } from "./hooks.js";
import type { ChannelAdapter, TroopStrategy, TunnelInfo } from "./plugin-contracts.js";
import type { PluginManifest } from "./plugin-manifest.js";
import type { StoreCheck, StoreHealth, TurnRecord, UsageSpentFilter, UsageSummary } from "./store-types.js";
import type {
  BoutRecord,
  EmbedRequest,
  EmbedResponse,
  FighterManifest,
  FighterRecord,
  FighterRow,
  LlmRequest,
  LlmResponse,
  ModelSettings,
  MoveDeclaration,
  SkillListing,
  StoredMessage,
  TaintSource,
  Usage,
} from "./types.js";

/** A call of the caller's own turn waits for an answer: the request, and the call in a line. */
export interface ApprovalNotice {
  id: string;
  move: string;
  /** The call's main argument (the command line, the path, the chat …). */
  subject: string;
  expires_at: string;
}

/** The answer to one message: DESIGN §4 step 7. */
export interface FighterMessageResult {
  bout_id: string;
  /** The turn this message started: its steps are in the bout's messages, its status in its turns. */
  turn_id: string;
  response: string;
  usage: Usage;
  iterations: number;
  tool_calls: { name: string; ok: boolean }[];
  model: string;
  /** `end` normally; `max_iterations` or `loop_guard` when the loop was stopped. */
  stop_reason: "end" | "max_iterations" | "loop_guard";
  /**
   * The untrusted content the turn took in, oldest first (its message's, then its moves'); absent
   * when none. A reply from a tainted turn is itself untrusted where it goes next.
   */
  taint?: TaintSource[];
}

export type SpawnRequest = { manifest: unknown } | { template: string; name?: string };

/**
 * Who sent a message, when it is not the fighter's own user at the API: another fighter (`messageTo`
 * sets it, with the words as that fighter wrote them) or a channel's user (`<platform>:<user id>`).
 * `turn.end` taps see it on the turn (the Creed counts it on the fighter's relationships).
 */
export type MessageSender =
  | { kind: "fighter"; name: string; content: string }
  | { kind: "user"; user: string; platform: string };

export interface MessageOptions {
  /** Continue this bout; by default the fighter's latest. */
  bout_id?: string;
  /** `"new"` starts a fresh bout instead of continuing the latest. */
  bout?: "new";
  /** Called with each streamed text delta as the model produces it. */
  onDelta?: (text: string) => void;
  /** Called when a call of this turn waits for an operator's answer (the streaming endpoint's `approval` event). */
  onApproval?: (approval: ApprovalNotice) => void;
  /** Tags the `message.delta` events so a WebSocket client can match them to its request. */
  request_id?: string;
  /** The caller's cancellation: aborting it cancels the turn, or keeps a queued one from ever starting. */
  signal?: AbortSignal;
  /**
   * Ids of the fighters whose turns wait on this one, outermost first (fighter-to-fighter calls).
   * A message to a fighter already in it is refused at once (CONFLICT), and so is one past
   * `[agent] max_call_depth`.
   */
  chain?: readonly string[];
  /**
   * Who starts this turn when no fighter does (a chain's starter wins over it): `channel:<platform>:<chat>`,
   * `gorilla:<name>`, `schedule`. A new bout is recorded with it, and without a bout the turn continues
   * the latest bout of this origin only. Absent (or `user`) for a user's own turn.
   */
  origin?: string;
  /** A retry with the same key (within 24 h) gets this attempt's reply instead of running again. */
  idempotency_key?: string;
  /**
   * `false`: no work after the reply (`turn.after` taps such as the Creed's reflection, compaction),
   * so the turn makes no model call once it has answered: a gorilla's cycle stays inside its budget.
   */
  aftercare?: boolean;
  /** Called once the turn is recorded started, with its ids: a caller learns the bout even if the turn then fails. */
  started?: (turn: { turn_id: string; bout_id: string }) => void;
  /** Who sent the message (a fighter, a channel's user); absent for the fighter's own user. */
  sender?: MessageSender;
  /**
   * The message itself is untrusted content (a channel message from a non-owner, a message from a
   * tainted turn): the turn starts tainted with these (`MoveCallInfo.taint`).
   */
  taint?: readonly TaintSource[];
}

export interface FighterUsage {
  fighter: string;
  usage: UsageSummary[];
  totals: { requests: number; input_tokens: number; output_tokens: number };
  /** What the priced calls cost in micro-units of `currency` (null: none was priced), and how many were not. */
  cost: { cost_micros: number | null; currency: "USD"; unpriced_requests: number };
}

/**
 * One limit of one budget as `GET /api/v1/budgets` and `spar budgets` show it: money in currency
 * units, tokens as integers; `name` is null for the global budget.
 */
export interface BudgetStatus {
  budget: string;
  scope: "global" | "fighter" | "gorilla" | "troop" | "channel";
  name: string | null;
  period: "daily" | "monthly";
  unit: "money" | "tokens";
  limit: number;
  spent: number;
  reserved: number;
  currency: string;
  resets_at: string;
  on_exceed: "stop" | "ask";
}

/**
 * One part of a prompt as `spar context` shows it. `stable`: in the prefix that stays byte-identical
 * between the fighter's turns (what a provider's prompt cache can hold).
 */
export interface PromptPart {
  /** `system`, `creed`, `skills`, `tools`, `mcp`, `summary`, `memory`, `history`, `message`, or a plugin's id. */
  part: string;
  /** What added it: `manifest` (the fighter's system prompt), `kernel`, `ring` (the kernel's taps) or a plugin id. */
  source: string;
  stable: boolean;
  /** The kernel's estimate (sdk/tokens.ts: four characters a token), not the provider's count. */
  tokens: number;
  /** Tools offered; messages of the history; memory_recall results in it. */
  count?: number;
}

/**
 * What a fighter's next turn would send, part by part, and what its input costs (GET
 * /api/v1/fighters/:id/context, `spar context`): the turn's own prompt, prepared as a dry run.
 */
export interface PromptContext {
  fighter: string;
  /** The bout the next turn continues (its latest, or the one asked for); null: a new one. */
  bout_id: string | null;
  model: { provider: string; model: string };
  /** The message it was prepared for: the one given, or "" (the next message is not known yet). */
  message: string;
  parts: PromptPart[];
  /** Every part's estimate, summed. */
  input_tokens: number;
  /** Whether the provider's prompt cache is used, and the stable prefix's estimate. */
  cache: { enabled: boolean; stable_tokens: number };
  /**
   * The input's cost in micro-units of `currency`, all of it at the input price (`uncached_micros`)
   * and with the stable prefix at the cached-input price (`cached_micros`, when the cache is on);
   * null for an unpriced model.
   */
  cost: { uncached_micros: number; cached_micros: number | null; currency: "USD" } | null;
}

/**
 * What `GET /api/v1/usage` takes (its query) and `spar usage` sends: a grouping (`day` when absent:
 * `UsageGrouping` in store-rows.ts), a range (`since`: `<n>d`, a date or an instant, default `30d`;
 * `until`: a date, through its end, or an instant, default the end of today), the days' time zone
 * (`tz`, an IANA name; default the machine's) and filters (a fighter by id or name, an origin or
 * origin kind, a provider, a model).
 */
export interface UsageReportRequest {
  by?: string;
  fighter?: string;
  since?: string;
  until?: string;
  tz?: string;
  origin?: string;
  provider?: string;
  model?: string;
}

/** A group's sums, or the total: cost in currency units (null when none of its calls was priced). */
export interface UsageTotal {
  requests: number;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  cache_write_tokens: number;
  cost: number | null;
  currency: string;
  /** Calls of a model without a price, not in `cost`. */
  unpriced_requests: number;
}

export interface UsageReportRow extends UsageTotal {
  /** The day (YYYY-MM-DD), `provider/model`, fighter name, origin (kind) or provider. */
  key: string;
}

/** `GET /api/v1/usage`'s body, printed as it is by `spar usage --json`. */
export interface UsageReport {
  usage: UsageReportRow[];
  total: UsageTotal;
}

export interface MoveListing extends MoveDeclaration {
  plugin: string;
}

export interface PluginListing {
  id: string;
  kind: string;
  version: string;
  description: string;
  source: "bundled" | "user";
  active: boolean;
  /** The plugin's folder (a skill pack's skill folders are relative to it). */
  dir: string;
}

/**
 * What the Ring offers its plugins and entry points (Arena, channels, gorillas). Fighters are
 * addressed by id or by name everywhere. Every method returns a promise (the store behind them may
 * be a server), but for the store's health, which is answered from memory.
 */
export interface RingServices {
  readonly version: string;
  readonly startedAt: Date;
  /**
   * Whether other daemons share this one's bus and store (a cluster bus): what a starting daemon
   * finds running may then be another node's, not left by its own last stop.
   */
  readonly clustered: boolean;
  readonly fighters: {
    spawn(request: SpawnRequest): Promise<FighterRecord>;
    list(): Promise<FighterRecord[]>;
    get(idOrName: string): Promise<FighterRecord>;
    kill(idOrName: string): Promise<void>;
    message(idOrName: string, text: string, options?: MessageOptions): Promise<FighterMessageResult>;
    /** A fighter-to-fighter message: the target's turn, its `sender` the sending fighter. */
    messageTo(
      fromIdOrName: string,
      toIdOrName: string,
      content: string,
      options?: Pick<MessageOptions, "signal" | "chain" | "taint">,
    ): Promise<FighterMessageResult>;
    /** Cancels the fighter's running turn; CONFLICT when none runs. */
    cancel(idOrName: string): Promise<{ turn_id: string; bout_id: string }>;
    /**
     * A call of the running turn `turnId` waits for an operator's answer while `wait` runs: the turn
     * is `awaiting_approval` (its taint so far recorded) and so is its fighter's status. Should the
     * daemon stop meanwhile, the turn stays so, and is taken up at the next start (`resume`).
     *
     * @example
     * const answer = await ring.fighters.awaitApproval(info.turn_id, info.taint, () => answered(request));
     */
    awaitApproval<T>(turnId: string, taint: readonly TaintSource[], wait: () => Promise<T>): Promise<T>;
    /** The turns left `awaiting_approval` (by a stopped daemon, or a node that died), oldest first. */
    awaiting(): Promise<TurnRecord[]>;
    /**
     * Takes up a turn left `awaiting_approval`, in its fighter's queue and under its lease: its
     * unanswered calls go through `move.beforeCall` again (marked `resumed`), no model call is
     * repeated, and the turn goes on to its end. CONFLICT when it no longer waits (another node took it up).
     */
    resume(turnId: string): Promise<FighterMessageResult>;
    bouts(idOrName: string): Promise<BoutRecord[]>;
    manifest(idOrName: string): Promise<FighterManifest>;
    usage(idOrName: string): Promise<FighterUsage>;
    /**
     * What the fighter's next turn would send (in `bout_id`, else its latest bout), prepared for
     * `message` (default ""), as a dry run: no model call, no side effect (README "spar context").
     */
    context(idOrName: string, options?: { bout_id?: string; message?: string }): Promise<PromptContext>;
  };
  /** The usage ledger, summed (issue 31 item 4: `GET /api/v1/usage`, `spar usage`, the dashboard). */
  readonly usage: {
    /** VALIDATION_FAILED naming the parameter for a bad one; FIGHTER_NOT_FOUND for an unknown fighter. */
    report(request: UsageReportRequest): Promise<UsageReport>;
  };
  readonly bouts: {
    messages(boutId: string): Promise<StoredMessage[]>;
    /** The bout's turns, oldest first, with their status and, when they did not complete, their error. */
    turns(boutId: string): Promise<TurnRecord[]>;
  };
  /** Troop strategies: named by manifests, imported when first used. */
  readonly strategies: {
    /** The names the enabled strategy plugins contribute (no plugin code imported). */
    names(): string[];
    /** Activates `onStrategy:<name>` and returns the strategy; undefined when no plugin provides it. */
    resolve(name: string): Promise<TroopStrategy | undefined>;
  };
  /** Messaging platforms: the `[channels.<id>]` tables in config.toml, each served by its plugin. */
  readonly channels: {
    /** The platforms configured, whose plugins were activated at start (`onChannel:<id>`). */
    configured(): string[];
    /** The platform's adapter; undefined when it is not configured or no plugin provides it. */
    resolve(platform: string): Promise<ChannelAdapter | undefined>;
  };
  /** The public URL forwarding to the webhook listener, opened on first use by the `[plugins] tunnel` plugin. */
  readonly tunnel: {
    open(): Promise<TunnelInfo>;
  };
  /**
   * One model call under the provider policy (timeouts, retries), e.g. for a summary. With `call`
   * (whose turn it follows: a reflection, a bout's summary), it is priced in the usage ledger and
   * reserved against the budgets like the turn's own calls; over a budget it throws BUDGET_EXCEEDED
   * (no one is asked: no one is waiting on it).
   */
  readonly llm: {
    complete(
      model: ModelSettings,
      request: Omit<LlmRequest, "model">,
      call?: SpendContext,
    ): Promise<LlmResponse>;
    /**
     * Embeds `request.input` with the model `settings` name (`[memory.embeddings]`), one vector per
     * text, in order: sent in batches (`batch_size` there, at most 96 texts a call), each batch within
     * its own deadline (`timeout_s`, default 30 s: PROVIDER_TIMEOUT) with the provider policy's
     * retries, the key only to the endpoint it is paired with. PROVIDER_ERROR naming the provider
     * when its plugin has no embeddings API (Anthropic). Not metered: no budget is reserved for it.
     *
     * @example
     * const { vectors } = await api.services.llm.embed(settings, { input: ["Ada moved to Lisbon"], purpose: "document" });
     */
    embed(settings: ModelSettings, request: Omit<EmbedRequest, "model">): Promise<EmbedResponse>;
  };
  /** The declared moves and those plugins offer at run time (`move.list`, without a fighter). */
  readonly moves: {
    list(): Promise<(MoveDeclaration & { plugin?: string })[]>;
    /** The skills plugins know (`move.skills`). */
    skills(): Promise<SkillListing[]>;
    /** The host folders a sandboxed process of `fighter` sees read-only (`move.mounts`). */
    mounts(fighter: FighterRow): Promise<SandboxMount[]>;
  };
  /** Request signing: the authorized public keys (each with its scope) and the nonces already used. */
  readonly auth: {
    key(keyId: string): Promise<AuthorizedKey | undefined>;
    keyCount(): Promise<number>;
    /** False when the key already used this nonce (a replay). */
    claimNonce(keyId: string, nonce: string, expiresAt: number): Promise<boolean>;
  };
  /** The bus's budget counters (issue 31): what the budgets plugin reserves against and reads. */
  readonly spend: {
    counters(): BudgetCounters;
    /** What the usage ledger holds since `since` for the rows `filter` takes: a missing counter's seed. */
    spent(filter: UsageSpentFilter & { since: string }): Promise<{ cost_micros: number; tokens: number }>;
  };
  readonly plugins: {
    list(): Promise<PluginListing[]>;
    manifest(id: string): Promise<PluginManifest | undefined>;
  };
  readonly store: {
    /** From memory: `corrupt` once a call or the integrity check met a damaged database. */
    health(): StoreHealth;
    /** The integrity check the store started when it opened, once it has finished. */
    integrity(): Promise<StoreCheck>;
    /** A consistent online snapshot, encrypted with the same key (`Store.backup`). */
    backup(destination: string): Promise<{ bytes: number; schema_version: number }>;
    /** Re-encrypts the database under a new master secret (`Store.rekey`; offline only). */
    rekey(masterSecret: Buffer): Promise<void>;
  };
}

/**
 * What a request-signing key may do (`spar key add <name> <key> --scope …`, DESIGN §17): `admin`
 * everything; `operator` everything but backups and what only the data dir's owner may do; `read`
 * GET routes only; `chat` message the fighters it names (by name or id) and read their bouts.
 *
 * @example
 * const scope: KeyScope = { kind: "chat", fighters: ["scribe"] };
 */
export type KeyScope =
  | { kind: "admin" }
  | { kind: "operator" }
  | { kind: "read" }
  | { kind: "chat"; fighters: readonly string[] };

/** An authorized key: its public half, and what requests it signs may do. */
export interface AuthorizedKey {
  publicKey: KeyObject;
  scope: KeyScope;
}
