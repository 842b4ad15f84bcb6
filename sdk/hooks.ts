/**
 * The Ring's hooks as plugins see them (DESIGN §3.1): one frozen object, grouped by domain, built by
 * the kernel (kernel/hooks.ts). Each hook's tapable kind is chosen on purpose and said in its comment.
 */
import type {
  AsyncParallelHook,
  AsyncSeriesBailHook,
  AsyncSeriesHook,
  AsyncSeriesWaterfallHook,
} from "tapable";
import type { Bus, BusOpenOptions, SparEvent } from "./events.js";
import type { ChannelAdapter, TroopStrategy, TunnelInfo } from "./plugin-contracts.js";
import type { ApprovalNotice, MessageSender } from "./services.js";
import type { Store, UsageSpentFilter } from "./store-types.js";
import type {
  BudgetLimits,
  Capability,
  ChatMessage,
  FighterManifest,
  FighterRow,
  LlmDriver,
  ModelSettings,
  MoveCaller,
  MoveDeclaration,
  MoveEffects,
  MoveHandler,
  PluginRoute,
  ProviderCredential,
  PublicAssets,
  RouteRegistry,
  SkillListing,
  StoredMessage,
  TaintSource,
  ToolCall,
  Usage,
} from "./types.js";

/** What the kernel hands a store plugin when it asks for the store. */
export interface StoreOpenOptions {
  home: string;
  /** The master secret; the store derives its key from it. The kernel zeroizes it once `open` returns. */
  masterSecret: Buffer;
}

/**
 * The prompt as it is being built: taps of `turn.prepare` add to it and pass it on. `tools` starts as
 * every move the fighter holds a grant for; a tap may offer fewer (the model can still call any of
 * them: a call is checked against the fighter's grants, not against this list).
 *
 * What the plugins add has two parts: `system`, the system prompt, which must stay byte-identical
 * between a fighter's turns (the providers' prompt caches key on it: README "Prompt caching"), and
 * `volatile`, for what changes from turn to turn or message to message (counters, dates, the skills
 * named for this message, the bout's summary). `volatile` is sent after the conversation so far,
 * just before the turn's own messages, headed as Spar's context, so that the system prompt and the
 * whole history before it stay a cacheable prefix. A tap that adds anything that varies adds it to
 * `volatile`.
 *
 * @example
 * hooks.turn.prepare.tap((prompt) => ({ ...prompt, volatile: `${prompt.volatile ?? ""}\n\nToday: ${today()}` }));
 */
export interface PromptParts {
  system: string;
  /** What may change between turns: sent after the history, before the turn's messages. */
  volatile?: string;
  messages: ChatMessage[];
  tools: MoveDeclaration[];
}

export interface TurnContext {
  fighter: FighterRow;
  bout_id: string;
  /**
   * A preview of the next prompt (`spar context`), not a turn: no model call follows, and a tap must
   * have no side effect (no counters, no budgets, no reinforcement), only add what it would add.
   */
  dry_run?: boolean;
}

export interface TurnSummary extends TurnContext {
  turn_id: string;
  /** Who started the turn's bout (lib/bout-origins.ts); `user` for a user's own. */
  origin: string;
  new_messages: ChatMessage[];
  usage: Usage;
  iterations: number;
  /** The model the turn used. */
  model: ModelSettings;
  /** Whether the turn started its bout. */
  new_bout: boolean;
  /** The estimated context of the bout's next prompt (system with plugins' additions, and history). */
  context_tokens: number;
  /** Who sent the turn's message, when not the fighter's own user (`MessageOptions.sender`). */
  sender?: MessageSender;
  /** The bout seq of `new_messages[0]` (the user's message); the rest follow it in order. */
  first_seq: number;
  /** The untrusted content the turn took in, oldest first; absent when none. */
  taint?: TaintSource[];
}

/** What `move.list` taps are asked for: the moves to offer one fighter, or all (no fighter: listing). */
export interface MoveListContext {
  fighter?: FighterRow;
}

/** What `move.mounts` taps are asked for: the fighter whose process is about to start. */
export interface MountContext {
  fighter: FighterRow;
}

/** A host folder lent read-only to a sandboxed process, at `target` inside the sandbox. */
export interface SandboxMount {
  /** The folder on the host (a real path). */
  source: string;
  /** Where the process sees it: absolute, outside the sandbox's own folders (`/skills/<name>`). */
  target: string;
}

/** What `provider.route` taps see: a fighter whose manifest names no model, and the message. */
export interface RouteContext {
  fighter: FighterRow;
  text: string;
}

/** A refusal a `move.beforeCall` tap returns; the model gets it as the tool's error result. */
export interface MoveRefusal {
  code:
    | "CAPABILITY_DENIED"
    | "VALIDATION_FAILED"
    | "FORBIDDEN"
    | "APPROVAL_DENIED"
    | "APPROVAL_REQUIRED"
    | "APPROVAL_EXPIRED"
    | "APPROVAL_STALE";
  message: string;
}

/**
 * A refusal a `fighter.spawning` tap returns: the spawn fails with it (400 or 403 by its code), the
 * manifest's offending field in `path`.
 */
export interface SpawnRefusal {
  code: "CAPABILITY_DENIED" | "VALIDATION_FAILED";
  message: string;
  /** A JSON pointer into the manifest, e.g. `/capabilities/0/scope`. */
  path?: string;
}

export interface MoveCallInfo {
  call: ToolCall;
  fighter: FighterRow;
  bout_id: string;
  turn_id: string;
  /**
   * Who started the turn's bout (lib/bout-origins.ts): `user`, `channel:<platform>:<chat>`,
   * `gorilla:<name>`, `schedule`, `fighter:<id>`, `troop-task:<id>`.
   */
  origin: string;
  /** The capability the move's declaration names, and its server (MCP) if it has one. */
  capability: string;
  server?: string;
  /** What the move may change (its declaration's `effects`, `external` when it says none) and whether it may destroy. */
  effects: MoveEffects;
  destructive: boolean;
  /** The fighter's grants that allow the move (`full_access` included). */
  grants: readonly Capability[];
  /** The fighters waiting on this turn, outermost first, with their grants for this move (see MoveContext). */
  callers: readonly MoveCaller[];
  /** The fighter's own folder, `<data dir>/workspaces/<name>/`. */
  workspace: string;
  /** The untrusted content the turn has taken in before this call, oldest first; empty when none. */
  taint: readonly TaintSource[];
  /**
   * The turn's cancellation (a cancel, the fighter's kill, shutdown): a tap that waits (an approval)
   * stops waiting when it fires. The move's own timeout starts after `beforeCall`.
   */
  signal: AbortSignal;
  /**
   * The call was asked for before its turn stopped while waiting for an approval, and the turn has
   * been taken up again (after a restart, or on another node): a policy finds its earlier answer,
   * and never lets a call through twice.
   */
  resumed?: boolean;
  /** Tells the turn's caller that the call waits for an answer (its stream shows it), when it listens. */
  onApproval?: (approval: ApprovalNotice) => void;
}

export interface MoveOutcome {
  ok: boolean;
  content: string;
  /** A failed call's code and message, as the model reads them in `content` (the kernel sets it). */
  error?: { code: string; message: string };
  /**
   * The result brought untrusted content into the turn (a move or an `afterCall` tap marks it): the
   * agent loop adds it to the turn's taint, which every later call of the turn sees.
   */
  taint?: TaintSource;
}

/** What a compaction strategy gets: the messages it replaces and the summary they extend, if any. */
export interface CompactionInput {
  fighter: FighterRow;
  bout_id: string;
  /** The turn after which the bout is compacted, and its bout's origin: whose the summary's call is. */
  turn_id: string;
  origin: string;
  model: ModelSettings;
  messages: StoredMessage[];
  previous_summary?: string;
  /** A summary longer than this many tokens should be condensed, not just extended. */
  summary_budget_tokens: number;
}

/** A fact a compaction's flush saved to memory: under `key`, the text `value`. */
export interface FlushedFact {
  key: string;
  value: string;
}

/** A compaction strategy: returns the summary that replaces the messages, or none (truncation). */
export interface CompactionStrategy {
  readonly name: string;
  compact(input: CompactionInput): Promise<{ summary?: string }>;
}

/** Who a model call of a turn is made for (`spend` hooks). */
export interface SpendContext {
  fighter: FighterRow;
  bout_id: string;
  turn_id: string;
  /** Who started the turn's bout (lib/bout-origins.ts); `user` for a user's own. */
  origin: string;
}

/**
 * A budget that applies to a model call, as a `spend.budgets` tap adds it: its scope and name (as
 * `fighter:ada:daily` shows them), the key its counters are kept under (a fighter's id, since a name
 * may be reused), its limits, and which of the usage ledger's rows count against it.
 */
export interface BudgetRule {
  scope: "global" | "fighter" | "gorilla" | "channel" | "troop";
  /** The fighter's, gorilla's or troop's name, the channel's platform; null for the global budget. */
  name: string | null;
  key: string;
  limits: BudgetLimits;
  ledger: UsageSpentFilter;
  /**
   * When one filter cannot name the budget's rows (a troop's: one origin per task), the filters whose
   * sums are added instead of `ledger`'s, for rows since `since`. Read only when a counter is seeded.
   */
  ledgers?: (since: string) => Promise<UsageSpentFilter[]>;
}

/** One call's figures: tokens (input and output) and cost in micro-units (null: the model is unpriced). */
export interface SpendFigures {
  tokens: number;
  cost_micros: number | null;
}

/** What `spend.reserve` taps get: the call, its worst case, the budgets that apply, and a way to ask. */
export interface SpendRequest extends SpendContext {
  model: ModelSettings;
  /** The call's worst case: the prompt's estimate and its `max_tokens`, at the model's prices. */
  worst(): SpendFigures;
  rules: readonly BudgetRule[];
  signal?: AbortSignal;
  /** Asks the operator whether the turn may go past a budget (`spend.ask`); undefined: no one to ask. */
  ask(question: { subject: string; why: string }): Promise<SpendAnswer | undefined>;
}

/** A reservation held for one call: settled to what it cost, or released when it failed. */
export interface SpendHold {
  /** `reported` false: the provider reported no usage, and `figures` are the estimate. */
  settle(figures: SpendFigures, reported: boolean): Promise<void>;
  release(): Promise<void>;
}

/** How an operator answered a `spend.ask`. */
export type SpendAnswer = "approved" | "denied" | "expired" | "cancelled";

/** What `spend.ask` taps get: the call's turn, what is asked (one line) and why. */
export interface SpendQuestion extends SpendContext {
  subject: string;
  why: string;
  signal: AbortSignal;
  onApproval?: (approval: ApprovalNotice) => void;
}

/** Address the daemon is about to serve, and the routes plugins added, given to the Arena when ready. */
export interface ListenRequest {
  host: string;
  port: number;
  routes: (PluginRoute | PublicAssets)[];
}

/** The kernel's hooks. Plugins tap them once, on activation, with their plugin id as the tap name. */
export interface RingHooks {
  readonly store: {
    /** Bail, called once at start: the active store plugin returns the opened store. */
    readonly open: AsyncSeriesBailHook<[StoreOpenOptions], Store | undefined>;
  };
  readonly bus: {
    /** Bail, called once at start before the store opens: the active bus plugin returns the bus. */
    readonly open: AsyncSeriesBailHook<[BusOpenOptions], Bus | undefined>;
  };
  readonly provider: {
    /**
     * Waterfall, called per message of a fighter whose manifest names no model, starting from
     * `default_model`: a tap may pick another model (complexity routing), or pass it on.
     */
    readonly route: AsyncSeriesWaterfallHook<[ModelSettings, RouteContext]>;
    /**
     * Bail, called per LLM call: the plugin that owns `settings.provider` returns a driver, others
     * undefined. `credential` is the only key the driver may send (the kernel chose it by the
     * operator's pairings); drivers never read keys from the environment themselves.
     */
    readonly resolve: AsyncSeriesBailHook<[ModelSettings, ProviderCredential], LlmDriver | undefined>;
  };
  readonly move: {
    /** Bail, called per tool call: the plugin that declares the move returns its handler. */
    readonly resolve: AsyncSeriesBailHook<[string], MoveHandler | undefined>;
    /** Bail, called before a move runs: a tap returns a refusal to stop it (capability, policy). */
    readonly beforeCall: AsyncSeriesBailHook<[MoveCallInfo], MoveRefusal | undefined>;
    /** Waterfall, called after every call, failed ones too: taps may rewrite the outcome (redaction) before it is stored. */
    readonly afterCall: AsyncSeriesWaterfallHook<[MoveOutcome, MoveCallInfo]>;
    /**
     * Waterfall, called per turn (and per listing, without a fighter): taps add the moves they
     * offer at run time (MCP tools) to the list and pass it on; a tap must also resolve them.
     */
    readonly list: AsyncSeriesWaterfallHook<[MoveDeclaration[], MoveListContext]>;
    /** Waterfall, called per listing: taps add the skills they know (a skills plugin). */
    readonly skills: AsyncSeriesWaterfallHook<[SkillListing[]]>;
    /**
     * Waterfall, called before a move starts a sandboxed process for a fighter (`shell_exec`): taps
     * add host folders the process sees read-only, each at its own path (a skills plugin: the
     * folders of the skills the fighter may use that hold scripts, at `/skills/<name>`).
     */
    readonly mounts: AsyncSeriesWaterfallHook<[SandboxMount[], MountContext]>;
  };
  readonly fighter: {
    /**
     * Bail, called before a fighter is stored, however it is spawned (the API, `fighter_spawn`, a
     * template): a plugin judging its grants' fields returns a refusal to stop the spawn. The
     * plugins of the moves that a grant with a `scope` allows are activated first.
     */
    readonly spawning: AsyncSeriesBailHook<[FighterManifest], SpawnRefusal | undefined>;
  };
  readonly compaction: {
    /** Bail, called when a bout's context passes the threshold: the plugin owning the strategy returns it. */
    readonly resolve: AsyncSeriesBailHook<[string], CompactionStrategy | undefined>;
    /**
     * Waterfall, called with the messages a compaction is about to remove from the context (beside
     * the strategy, when `[memory.compaction] flush_facts` is on): a memory plugin saves the durable
     * facts in them and adds what it saved; later taps (the Creed) read what was saved. A failing tap
     * is logged and the compaction goes on.
     */
    readonly flush: AsyncSeriesWaterfallHook<[FlushedFact[], CompactionInput]>;
  };
  readonly strategy: {
    /** Bail, called per troop task: the plugin owning the strategy (activated on `onStrategy:<name>`) returns it. */
    readonly resolve: AsyncSeriesBailHook<[string], TroopStrategy | undefined>;
  };
  readonly channel: {
    /** Bail: the plugin owning the platform (activated on `onChannel:<id>`) returns its adapter. */
    readonly resolve: AsyncSeriesBailHook<[string], ChannelAdapter | undefined>;
  };
  readonly tunnel: {
    /**
     * Bail, called once, when a channel first needs the public URL: the active tunnel plugin (the
     * `[plugins] tunnel` slot) opens the tunnel to `target` (the webhook listener) and returns it.
     */
    readonly open: AsyncSeriesBailHook<[{ target: string }], TunnelInfo | undefined>;
  };
  readonly turn: {
    /** Waterfall, called before each turn: taps add to the system prompt and context. */
    readonly prepare: AsyncSeriesWaterfallHook<[PromptParts, TurnContext]>;
    /** Series, called once a turn is committed (a failing tap is logged, never fails the reply): Creed counters, relationships. */
    readonly end: AsyncSeriesHook<[TurnSummary]>;
    /** Series, called after the reply, in the fighter's queue before its next turn: slow bookkeeping (reflection). */
    readonly after: AsyncSeriesHook<[TurnSummary]>;
  };
  readonly daemon: {
    /** Series, called once the store is open and the default fighter exists: the Arena starts listening. */
    readonly ready: AsyncSeriesHook<[ListenRequest]>;
    /** Series, called on shutdown before the store closes: stop accepting work, flush. */
    readonly close: AsyncSeriesHook<[]>;
  };
  readonly arena: {
    /** Series, called once when the daemon is ready, before it listens: taps add routes and public assets. */
    readonly routes: AsyncSeriesHook<[RouteRegistry]>;
  };
  readonly spend: {
    /**
     * Waterfall, called before each model call of a turn (lib/usage-meter.ts): taps add the budgets
     * that apply to it (the budgets plugin: global, fighter, channel; the gorilla runtime: the
     * gorilla's own). None: the call is made with no reservation and no store or bus round trip.
     */
    readonly budgets: AsyncSeriesWaterfallHook<[BudgetRule[], SpendContext]>;
    /**
     * Bail, called when a budget applies: the budgets plugin reserves the call's worst case against
     * every one at once and returns the hold, or throws BUDGET_EXCEEDED to stop the turn.
     */
    readonly reserve: AsyncSeriesBailHook<[SpendRequest], SpendHold | undefined>;
    /** Bail, called when a budget with `on_exceed = "ask"` is passed: the approvals plugin asks and waits. */
    readonly ask: AsyncSeriesBailHook<[SpendQuestion], SpendAnswer | undefined>;
  };
  readonly events: {
    /** Parallel, called for every published event; a failing tap is logged, never fatal. */
    readonly published: AsyncParallelHook<[SparEvent]>;
  };
}
