import { AsyncParallelHook, AsyncSeriesBailHook, AsyncSeriesHook, AsyncSeriesWaterfallHook } from "tapable";
import type { Bus, BusOpenOptions, SparEvent } from "./events.js";
import type {
  RecordedError,
  SpecialistReason,
  Store,
  TroopRecord,
  TroopStep,
  TroopVote,
} from "./store-types.js";
import type {
  ChatMessage,
  FighterRow,
  LlmDriver,
  ModelSettings,
  MoveDeclaration,
  MoveHandler,
  PluginRoute,
  ProviderCredential,
  PublicAssets,
  RouteRegistry,
  SkillListing,
  StoredMessage,
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
 */
export interface PromptParts {
  system: string;
  messages: ChatMessage[];
  tools: MoveDeclaration[];
}

export interface TurnContext {
  fighter: FighterRow;
  bout_id: string;
}

export interface TurnSummary extends TurnContext {
  new_messages: ChatMessage[];
  usage: Usage;
  iterations: number;
  /** The model the turn used. */
  model: ModelSettings;
  /** Whether the turn started its bout. */
  new_bout: boolean;
  /** The estimated context of the bout's next prompt (system with plugins' additions, and history). */
  context_tokens: number;
}

/** What `move.list` taps are asked for: the moves to offer one fighter, or all (no fighter: listing). */
export interface MoveListContext {
  fighter?: FighterRow;
}

/** What `provider.route` taps see: a fighter whose manifest names no model, and the message. */
export interface RouteContext {
  fighter: FighterRow;
  text: string;
}

/** A refusal a `move.beforeCall` tap returns; the model gets it as the tool's error result. */
export interface MoveRefusal {
  code: "CAPABILITY_DENIED" | "VALIDATION_FAILED" | "FORBIDDEN";
  message: string;
}

export interface MoveCallInfo {
  call: ToolCall;
  fighter: FighterRow;
  bout_id: string;
  /** The capability the move's declaration names, and its server (MCP) if it has one. */
  capability: string;
  server?: string;
}

export interface MoveOutcome {
  ok: boolean;
  content: string;
}

/** What a compaction strategy gets: the messages it replaces and the summary they extend, if any. */
export interface CompactionInput {
  fighter: FighterRow;
  bout_id: string;
  model: ModelSettings;
  messages: StoredMessage[];
  previous_summary?: string;
  /** A summary longer than this many tokens should be condensed, not just extended. */
  summary_budget_tokens: number;
}

/** A compaction strategy: returns the summary that replaces the messages, or none (truncation). */
export interface CompactionStrategy {
  readonly name: string;
  compact(input: CompactionInput): Promise<{ summary?: string }>;
}

/** A troop member as a strategy sees it: who it is and what it can do (the specialist scores these). */
export interface TroopMember {
  id: string;
  name: string;
  description: string;
  /** Its capability grants' types. */
  capabilities: string[];
  skills: string[];
}

/** One troop task as the runtime hands it to a strategy. */
export interface StrategyTask {
  troop: TroopRecord;
  task: string;
  leader: TroopMember;
  members: TroopMember[];
  /** Aborted when the task is cancelled; a strategy stops starting steps once it is. */
  signal: AbortSignal;
  /** The most steps a strategy runs at once (`[troops] max_parallel`). */
  max_parallel: number;
  /**
   * Runs one step, recorded on the task: a turn of the fighter in a fresh bout with `input`. A
   * failure is a step with `error` (returned, never thrown).
   */
  step(fighterId: string, input: string, role: string): Promise<TroopStep>;
  /**
   * A step whose output must be JSON passing `schema`; asked once more, with what was wrong, when it
   * is not. `value` is absent when both attempts failed (both steps are recorded).
   */
  structured<T>(
    fighterId: string,
    input: string,
    schema: Record<string, unknown>,
    role: string,
  ): Promise<{ value?: T; step: TroopStep }>;
  /** The troop's rotation counter, advanced by one (survives restarts): the value before. */
  rotate(): Promise<number>;
}

/** How a strategy ended a task: a result, or an error; with the votes or the reason it kept. */
export interface StrategyOutcome {
  result?: string;
  error?: RecordedError;
  votes?: TroopVote[];
  reason?: SpecialistReason;
}

/** A troop coordination strategy (`pipeline`, `broadcast`, …), from a strategy plugin. */
export interface TroopStrategy {
  readonly name: string;
  run(task: StrategyTask): Promise<StrategyOutcome>;
}

/** A messaging platform as the rest of Spar uses it (the `channel_notify` move, `spar channel status`). */
export interface ChannelAdapter {
  /** The platform id: `telegram`, `discord`, `slack`. */
  readonly platform: string;
  /**
   * Posts `text` to `chat` (the platform's chat or channel id), or to the channel's configured
   * `notify_chat` when none is given; long text is split to the platform's limits.
   */
  send(text: string, chat?: string): Promise<{ chat: string; message_ids: string[] }>;
  /** How the channel is doing, for `spar channel status`. */
  status(): Promise<ChannelStatus>;
}

export interface ChannelStatus {
  platform: string;
  /** `webhook` (deliveries through the tunnel) or `gateway` (a connection the daemon keeps). */
  mode: string;
  connected: boolean;
  /** The URL the platform delivers to, as registered (webhook mode). */
  webhook_url?: string;
  /** The fighter that answers. */
  fighter: string;
  allowlist_size: number;
  last_inbound_at?: string;
  inbound: number;
  outbound: number;
  /** Deliveries refused: bad or missing signature, sender not allowed, sender over its rate. */
  refused: { signature: number; allowlist: number; rate: number };
  /** The last problem (registration failed, the gateway dropped), when there is one. */
  error?: string;
}

/** The public side of the tunnel: where platforms reach the webhook listener. */
export interface TunnelInfo {
  /** `https://…`, no trailing slash. */
  url: string;
  mode: "quick" | "named" | "manual";
  /** Why the tunnel is down, when it went down after opening (cloudflared exited). */
  error?: string;
}

/** Address the daemon is about to serve, and the routes plugins added, given to the Arena when ready. */
export interface ListenRequest {
  host: string;
  port: number;
  routes: (PluginRoute | PublicAssets)[];
}

/**
 * Builds the kernel's hooks: one frozen object, grouped by domain. Plugins tap these once, on
 * activation, with their plugin id as the tap name (tapable cannot untap).
 */
export function createHooks() {
  return Object.freeze({
    store: Object.freeze({
      /** Bail, called once at start: the active store plugin returns the opened store. */
      open: new AsyncSeriesBailHook<[StoreOpenOptions], Store | undefined>(["options"]),
    }),
    bus: Object.freeze({
      /** Bail, called once at start before the store opens: the active bus plugin returns the bus. */
      open: new AsyncSeriesBailHook<[BusOpenOptions], Bus | undefined>(["options"]),
    }),
    provider: Object.freeze({
      /**
       * Waterfall, called per message of a fighter whose manifest names no model, starting from
       * `default_model`: a tap may pick another model (complexity routing), or pass it on.
       */
      route: new AsyncSeriesWaterfallHook<[ModelSettings, RouteContext]>(["model", "context"]),
      /**
       * Bail, called per LLM call: the plugin that owns `settings.provider` returns a driver, others
       * undefined. `credential` is the only key the driver may send (the kernel chose it by the
       * operator's pairings); drivers never read keys from the environment themselves.
       */
      resolve: new AsyncSeriesBailHook<[ModelSettings, ProviderCredential], LlmDriver | undefined>([
        "settings",
        "credential",
      ]),
    }),
    move: Object.freeze({
      /** Bail, called per tool call: the plugin that declares the move returns its handler. */
      resolve: new AsyncSeriesBailHook<[string], MoveHandler | undefined>(["name"]),
      /** Bail, called before a move runs: a tap returns a refusal to stop it (capability, policy). */
      beforeCall: new AsyncSeriesBailHook<[MoveCallInfo], MoveRefusal | undefined>(["info"]),
      /** Waterfall, called after every call, failed ones too: taps may rewrite the outcome (redaction) before it is stored. */
      afterCall: new AsyncSeriesWaterfallHook<[MoveOutcome, MoveCallInfo]>(["outcome", "info"]),
      /**
       * Waterfall, called per turn (and per listing, without a fighter): taps add the moves they
       * offer at run time (MCP tools) to the list and pass it on; a tap must also resolve them.
       */
      list: new AsyncSeriesWaterfallHook<[MoveDeclaration[], MoveListContext]>(["moves", "context"]),
      /** Waterfall, called per listing: taps add the skills they know (a skills plugin). */
      skills: new AsyncSeriesWaterfallHook<[SkillListing[]]>(["skills"]),
    }),
    compaction: Object.freeze({
      /** Bail, called when a bout's context passes the threshold: the plugin owning the strategy returns it. */
      resolve: new AsyncSeriesBailHook<[string], CompactionStrategy | undefined>(["strategy"]),
    }),
    strategy: Object.freeze({
      /** Bail, called per troop task: the plugin owning the strategy (activated on `onStrategy:<name>`) returns it. */
      resolve: new AsyncSeriesBailHook<[string], TroopStrategy | undefined>(["strategy"]),
    }),
    channel: Object.freeze({
      /** Bail: the plugin owning the platform (activated on `onChannel:<id>`) returns its adapter. */
      resolve: new AsyncSeriesBailHook<[string], ChannelAdapter | undefined>(["platform"]),
    }),
    tunnel: Object.freeze({
      /**
       * Bail, called once, when a channel first needs the public URL: the active tunnel plugin (the
       * `[plugins] tunnel` slot) opens the tunnel to `target` (the webhook listener) and returns it.
       */
      open: new AsyncSeriesBailHook<[{ target: string }], TunnelInfo | undefined>(["request"]),
    }),
    turn: Object.freeze({
      /** Waterfall, called before each turn: taps add to the system prompt and context. */
      prepare: new AsyncSeriesWaterfallHook<[PromptParts, TurnContext]>(["prompt", "context"]),
      /** Series, called once a turn is committed (a failing tap is logged, never fails the reply): Creed counters. */
      end: new AsyncSeriesHook<[TurnSummary]>(["summary"]),
      /** Series, called after the reply, in the fighter's queue before its next turn: slow bookkeeping (reflection). */
      after: new AsyncSeriesHook<[TurnSummary]>(["summary"]),
    }),
    daemon: Object.freeze({
      /** Series, called once the store is open and the default fighter exists: the Arena starts listening. */
      ready: new AsyncSeriesHook<[ListenRequest]>(["listen"]),
      /** Series, called on shutdown before the store closes: stop accepting work, flush. */
      close: new AsyncSeriesHook<[]>([]),
    }),
    arena: Object.freeze({
      /** Series, called once when the daemon is ready, before it listens: taps add routes and public assets. */
      routes: new AsyncSeriesHook<[RouteRegistry]>(["registry"]),
    }),
    events: Object.freeze({
      /** Parallel, called for every published event; a failing tap is logged, never fatal. */
      published: new AsyncParallelHook<[SparEvent]>(["event"]),
    }),
  });
}

export type RingHooks = ReturnType<typeof createHooks>;
