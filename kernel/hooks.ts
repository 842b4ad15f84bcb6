import { AsyncParallelHook, AsyncSeriesBailHook, AsyncSeriesHook, AsyncSeriesWaterfallHook } from "tapable";
import type { Bus, BusOpenOptions, SparEvent } from "./events.js";
import type { ChannelAdapter, TroopStrategy, TunnelInfo } from "./plugin-contracts.js";
import type { Store } from "./store-types.js";
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
