/**
 * The SDK: the package entry `spar/sdk`, and with the kits (`spar/sdk/<kit>`, sdk/kits/) all a
 * plugin imports. Types, `definePlugin`, the error catalog, the hook and event declarations; the
 * Ring that implements them (`kernel/`) is internal, and nothing under `sdk/` imports it.
 */
import type { PluginData } from "./collections.js";
import type { SparConfig } from "./config.js";
import type { EventBus } from "./events.js";
import type { RingHooks } from "./hooks.js";
import type { RingServices } from "./services.js";

export type { CredentialEnv } from "../lib/driver-cache.js";
export { driverCache } from "../lib/driver-cache.js";
export { refuseLasting } from "../lib/fighter-chain.js";
export {
  checkEmbeddings,
  isRetryableStatus,
  parseRetryAfter,
  providerError,
} from "../lib/provider-errors.js";
export { anySignal } from "../lib/signals.js";
export { cancellation, cancelledError, isCancelled, isShutdown, shutdownCancellation } from "./cancel.js";
export { canonicalJson } from "./canonical.js";
export {
  checkDataDeclaration,
  declarationChecksum,
  indexedFields,
  MAX_QUERY_ROWS,
  searchedFields,
  searchedText,
} from "./collection-checks.js";
export { createPluginData, MAX_RANK_ROWS, TRANSACTION_TIMEOUT_MS } from "./collection-engine.js";
export { MAX_RANK_TERMS, MAX_TERM_CHARS, queryTerms, wordsOf } from "./collection-terms.js";
export type * from "./collections.js";
export type {
  CompactionConfig,
  DecayConfig,
  EmbeddingsConfig,
  RoutingConfig,
  SandboxConfig,
  SparConfig,
} from "./config.js";
export { parseListen } from "./config.js";
export type { ErrorCode, ErrorExtra } from "./errors.js";
export { ERROR_CATALOG, isSparError, SparError } from "./errors.js";
export type {
  Admission,
  BudgetCounters,
  BudgetEventFields,
  BudgetLine,
  BudgetVerdict,
  Bus,
  BusOpenOptions,
  EventBus,
  EventListener,
  QuotaLimits,
  QuotaWindows,
  Reservation,
  SparEvent,
  SparEventKind,
  SparEventMap,
  SparEventPayload,
  TurnLease,
  TurnLeases,
} from "./events.js";
export type {
  BudgetRule,
  CompactionInput,
  CompactionStrategy,
  FlushedFact,
  ListenRequest,
  MountContext,
  MoveCallInfo,
  MoveListContext,
  MoveOutcome,
  MoveRefusal,
  PromptParts,
  RingHooks,
  RouteContext,
  SandboxMount,
  SpawnRefusal,
  SpendAnswer,
  SpendContext,
  SpendFigures,
  SpendHold,
  SpendQuestion,
  SpendRequest,
  StoreOpenOptions,
  TurnContext,
  TurnSummary,
} from "./hooks.js";
export type {
  GaugeName,
  HeaderCarrier,
  Observation,
  ObservedEnd,
  ObservedKind,
  ObservedOperation,
  Observer,
} from "./observe.js";
export {
  addObserver,
  observe,
  observing,
  outgoingHeaders,
  provideGauge,
  readGauge,
  withIncoming,
} from "./observe.js";
export type {
  ApprovalAnswerer,
  ApprovalPress,
  ApprovalPressOutcome,
  ApprovalPrompt,
  ChannelAdapter,
  ChannelApprovals,
  ChannelStatus,
  StrategyOutcome,
  StrategyTask,
  TroopMember,
  TroopStrategy,
  TunnelInfo,
} from "./plugin-contracts.js";
export type { PluginManifest } from "./plugin-manifest.js";
export { RING_GROUPS, type RingGroup } from "./plugin-scope.js";
export { findForbiddenKey, forbiddenKeyMessage } from "./safe-keys.js";
export { formatSchemaErrors, validatorFor } from "./schema.js";
export { BUDGET_SCHEMA, badBudgetKey } from "./schemas.js";
export type {
  ApprovalNotice,
  AuthorizedKey,
  BudgetStatus,
  FighterMessageResult,
  KeyScope,
  MessageOptions,
  MessageSender,
  PromptContext,
  PromptPart,
  RingServices,
  UsageReport,
  UsageReportRequest,
  UsageReportRow,
  UsageTotal,
} from "./services.js";
export { TURN_TAINT_KEPT } from "./store-rows.js";
export type * from "./store-types.js";
export { contextTokens, estimateTokens, messageTokens, promptTokens } from "./tokens.js";
export {
  CONTEXT_HEADING,
  type PlacedContext,
  placeContext,
  QUOTED_HEADING,
  quoteHeading,
  renderContext,
} from "./turn-context.js";
export type * from "./types.js";
export { OPEN_CAPABILITY } from "./types.js";
export { PACKAGE_ROOT } from "./version.js";

/** Where a tap runs among a hook's taps: phases run in this order. */
export type TapPhase = "first" | "early" | "normal" | "late" | "last";

/**
 * Where a tap runs, declared: its phase (default "normal"), then, within the phase, before or after
 * the taps of the plugins named (ids), then by plugin id. Never by the order plugins were imported,
 * so a prompt's stable prefix (what providers' caches reuse) is the same on every start.
 *
 * @example
 * hooks.turn.prepare.tap(addCreed, { phase: "early", before: ["moves-skills"] });
 */
export interface TapOptions {
  phase?: TapPhase;
  before?: string | readonly string[];
  after?: string | readonly string[];
}

/** One hook as a plugin sees it: `tap` registers a handler under the plugin's id. */
export interface ScopedHook<Args extends unknown[], R> {
  tap(fn: (...args: Args) => R | Promise<R>, options?: TapOptions): void;
}

type Scoped<H> = H extends { promise(...args: infer A): Promise<infer R> }
  ? A extends unknown[]
    ? ScopedHook<A, R>
    : never
  : { readonly [K in keyof H]: Scoped<H[K]> };

/** The kernel's hooks with every tap named after, and every escaping error wrapped with, the plugin id. */
export type PluginHooks = Scoped<RingHooks>;

export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** What a plugin's `apply` receives. */
export interface PluginApi {
  readonly id: string;
  readonly hooks: PluginHooks;
  /**
   * The Ring's services: the groups the manifest declares in `uses` (plugin.json), and `version`,
   * `startedAt`, `clustered`. Reaching for another group throws PLUGIN_INVALID naming the plugin
   * and the group.
   *
   * @example
   * // plugin.json: "uses": ["fighters"]
   * const fighter = await api.ring.fighters.get("scribe");
   */
  readonly ring: RingServices;
  readonly events: EventBus;
  /** The daemon's configuration; `sections` holds only this plugin's own tables (its manifest's `sections`). */
  readonly config: Readonly<SparConfig>;
  /** The data dir (`$SPAR_HOME` or `~/.spar`). */
  readonly home: string;
  /**
   * The daemon's environment: the variables it was started with over those of `<home>/.env`. Read
   * keys and tokens here, never from `process.env`, which does not hold .env's. Never hand it to a
   * child process whole: give a child an environment built from the few names it needs.
   *
   * @example
   * const token = api.env[settings.token_env];
   */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** The plugin's own folder (where its plugin.json is). */
  readonly dir: string;
  readonly kernelVersion: string;
  readonly log: Logger;
  /**
   * The plugin's own collections, as its manifest's `data` declares them: `api.data.<name>`, and
   * `api.data.transaction`. Empty for a plugin that declares none. Usable once the store is open
   * (from `daemon.ready` on, and in any hook or route).
   */
  readonly data: PluginData;
}

export interface SparPlugin<C = Record<string, unknown>> {
  /** Must equal the manifest's `id` and the folder name. */
  readonly id: string;
  /** Called once, on the plugin's first activation event; `config` is its validated config.toml table. */
  apply(api: PluginApi, config: C): void | Promise<void>;
}

/**
 * Authors a plugin. The module's default export must be the result.
 *
 * @example
 * export default definePlugin({
 *   id: "provider-echo",
 *   apply({ hooks }) {
 *     hooks.provider.resolve.tap((settings) => (settings.provider === "echo" ? echoDriver : undefined));
 *   },
 * });
 */
export function definePlugin<C = Record<string, unknown>>(plugin: SparPlugin<C>): SparPlugin<C> {
  return plugin;
}
