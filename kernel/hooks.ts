import { AsyncParallelHook, AsyncSeriesBailHook, AsyncSeriesHook, AsyncSeriesWaterfallHook } from "tapable";
import type { SparEvent } from "./events.js";
import type { Store } from "./store-types.js";
import type {
  ChatMessage,
  FighterRow,
  LlmDriver,
  ModelSettings,
  MoveHandler,
  ProviderCredential,
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

/** The prompt as it is being built: taps of `turn.prepare` add to it and pass it on. */
export interface PromptParts {
  system: string;
  messages: ChatMessage[];
}

export interface TurnContext {
  fighter: FighterRow;
  bout_id: string;
}

export interface TurnSummary extends TurnContext {
  new_messages: ChatMessage[];
  usage: Usage;
  iterations: number;
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
  /** The capability the move's manifest declares. */
  capability: string;
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

/** Address the daemon is about to serve, given to the Arena when the daemon is ready. */
export interface ListenRequest {
  host: string;
  port: number;
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
    provider: Object.freeze({
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
      /** Waterfall, called after a move ran: taps may rewrite the outcome (redaction) before it is stored. */
      afterCall: new AsyncSeriesWaterfallHook<[MoveOutcome, MoveCallInfo]>(["outcome", "info"]),
    }),
    compaction: Object.freeze({
      /** Bail, called when a bout's context passes the threshold: the plugin owning the strategy returns it. */
      resolve: new AsyncSeriesBailHook<[string], CompactionStrategy | undefined>(["strategy"]),
    }),
    turn: Object.freeze({
      /** Waterfall, called before each turn: taps add to the system prompt and context. */
      prepare: new AsyncSeriesWaterfallHook<[PromptParts, TurnContext]>(["prompt", "context"]),
      /** Series, called after a turn's messages are committed: Creed, decay, usage bookkeeping. */
      end: new AsyncSeriesHook<[TurnSummary]>(["summary"]),
    }),
    daemon: Object.freeze({
      /** Series, called once the store is open and the default fighter exists: the Arena starts listening. */
      ready: new AsyncSeriesHook<[ListenRequest]>(["listen"]),
      /** Series, called on shutdown before the store closes: stop accepting work, flush. */
      close: new AsyncSeriesHook<[]>([]),
    }),
    events: Object.freeze({
      /** Parallel, called for every published event; a failing tap is logged, never fatal. */
      published: new AsyncParallelHook<[SparEvent]>(["event"]),
    }),
  });
}

export type RingHooks = ReturnType<typeof createHooks>;
