/**
 * The shapes shared by the kernel and its plugins: model settings, fighters, bouts, messages, the
 * internal LLM request/response, moves and the store. Plugins see these through `spar/sdk` (sdk/index.ts).
 */

/** Which LLM a request goes to. `base_url` is handed to the provider's SDK as its base URL. */
export interface ModelSettings {
  provider: string;
  model: string;
  base_url?: string;
  api_key_env?: string;
  max_tokens?: number;
  temperature?: number;
  context_window?: number;
  /** The whole call to the provider, retries included, must finish within this. Default 120. */
  timeout_s?: number;
  /** Retries for failures worth retrying (connection, 408, 409, 429, 5xx). Default 2. */
  max_retries?: number;
}

export type WeightClass = "flyweight" | "lightweight" | "middleweight" | "heavyweight";

/** The capability of moves every fighter may use, granted or not. */
export const OPEN_CAPABILITY = "none";

/**
 * A capability grant. `type` names it (the kernel's types, or one an installed plugin's move
 * declares); `scope` (paths), `pattern` (commands), `hosts` or `server` narrow it where the type
 * takes one. The kernel matches the type (and `server`); the move checks the rest.
 */
export interface Capability {
  type: string;
  scope?: string | string[];
  pattern?: string | string[];
  hosts?: string | string[];
  server?: string;
  /**
   * `channel_notify`: chats it may post to besides those that wrote to the fighter through an
   * allowlist, each `"<platform>:<chat>"` (`"telegram:-1001234567890"`, `"slack:C012AB3CDE"`).
   */
  targets?: string | string[];
  /**
   * What a call this grant allows needs before it runs (the approvals plugin, `[approvals]`):
   * `"ask"` the operator first, `"deny"` never. Absent: the operator's rules and the defaults decide.
   */
  approval?: "ask" | "deny";
}

export interface FighterManifest {
  name: string;
  description: string;
  system_prompt: string;
  model?: ModelSettings;
  weight_class?: WeightClass;
  capabilities?: Capability[];
  skills?: string[];
  quota?: { requests_per_minute?: number; tokens_per_minute?: number };
  max_iterations?: number;
  /** Spend this fighter's turns may make per day and month (README "Budgets"). */
  budget?: BudgetLimits;
}

/**
 * A budget's limits (`[budgets.global]`, a manifest's `budget`, GORILLA.toml's `[budget]`): money in
 * the `[budgets]` currency, tokens (input plus output); any subset. Over one, a call is refused
 * (`stop`, BUDGET_EXCEEDED) or asked about (`ask`).
 *
 * @example
 * const budget: BudgetLimits = { daily: 0.5, monthly_tokens: 2_000_000, on_exceed: "ask" };
 */
export interface BudgetLimits {
  daily?: number;
  monthly?: number;
  daily_tokens?: number;
  monthly_tokens?: number;
  on_exceed?: "stop" | "ask";
}

/** `awaiting_approval`: its turn waits for an operator's answer to a call (README "Approvals"). */
export type FighterStatus = "idle" | "fighting" | "resting" | "awaiting_approval";

/** A fighter as the store keeps it. */
export interface FighterRow {
  id: string;
  name: string;
  manifest: FighterManifest;
  created_at: string;
}

/** A fighter as the API shows it. */
export interface FighterRecord {
  id: string;
  name: string;
  description: string;
  status: FighterStatus;
  weight_class: WeightClass;
  model: ModelSettings;
  capabilities: Capability[];
  skills: string[];
  created_at: string;
}

export interface BoutRecord {
  id: string;
  fighter_id: string;
  created_at: string;
  updated_at: string;
  message_count: number;
  /**
   * Who started the bout when it was not a user (lib/bout-origins.ts): `fighter:<id>` for the bout a
   * fighter's messages to this one run in (one per caller), `troop-task:<id>` for a troop step's,
   * `channel:<platform>:<chat>`, `gorilla:<name>`, `schedule`. Absent in the store for a user's own
   * bout (listings show `user`). "The latest bout" is the latest of the caller's own origin.
   */
  origin?: string;
}

export interface ToolCall {
  id: string;
  name: string;
  /** Parsed arguments; a model that sends invalid JSON gets `{}` here and `raw_arguments` kept. */
  arguments: Record<string, unknown>;
  raw_arguments?: string;
}

/** One message of a conversation, in the provider-neutral shape the agent loop works with. */
export type ChatMessage =
  | { role: "user"; content: string }
  | { role: "assistant"; content: string; tool_calls?: ToolCall[] }
  | { role: "tool"; tool_call_id: string; name: string; content: string; is_error?: boolean };

/**
 * A stored message: a ChatMessage plus where and when. `compacted` marks a message that compaction
 * replaced in the model's context (by a summary, or by nothing); it stays on disk and in listings.
 */
export type StoredMessage = ChatMessage & {
  id: string;
  bout_id: string;
  seq: number;
  created_at: string;
  /** The turn it belongs to (absent on messages stored before turns were recorded). */
  turn_id?: string;
  compacted?: boolean;
};

export interface ToolDefinition {
  name: string;
  description: string;
  /** JSON Schema of the input object. */
  input_schema: Record<string, unknown>;
}

export interface Usage {
  /** Every prompt token, those read from or written to the provider's prompt cache included. */
  input_tokens: number;
  output_tokens: number;
  /** Of `input_tokens`, those read from the provider's prompt cache (absent: none reported). */
  cached_tokens?: number;
  /** Of `input_tokens`, those written to the provider's prompt cache (absent: none reported). */
  cache_write_tokens?: number;
}

/**
 * How a request may use its provider's prompt cache (README "Prompt caching"): absent when caching
 * is off for the provider (`[providers.<name>] prompt_cache = false`) or the caller asks for none.
 * A driver that knows no cache ignores it; the request is complete without it.
 */
export interface PromptCache {
  /** A stable key per fighter (a hash of its id, never a secret): OpenAI's `prompt_cache_key`. */
  key: string;
  /**
   * `system.slice(0, stable_chars)` stays byte-identical between the fighter's turns; what follows
   * it may change. A turn's system prompt is all stable: what changes goes in `LlmRequest.context`.
   */
  stable_chars: number;
}

/** The one request shape every provider plugin accepts. */
export interface LlmRequest {
  model: ModelSettings;
  /** The system prompt; a turn's is its stable part, the same for every turn of the fighter. */
  system: string;
  messages: ChatMessage[];
  /**
   * Spar's context for this turn, headed as Spar's (sdk/turn-context.ts): what changes from turn to
   * turn (the Creed's counters, the skills named for this message, the MCP status, the summary).
   * A driver sends it just before the turn's first user message (`placeContext`), in its provider's
   * idiom, and never drops it: after the history, it leaves the conversation so far a cacheable prefix.
   */
  context?: string;
  /** Where the turn's own messages (its user message, then its tool loop) begin in `messages`. */
  turn_start?: number;
  /** In a stable order (the kernel's), so they are part of the cacheable prefix. */
  tools: ToolDefinition[];
  /** Where the cacheable prefix ends, and the fighter's cache key. */
  cache?: PromptCache;
  /** When given, the provider streams and calls this with each text delta as it arrives. */
  onDelta?: (text: string) => void;
  signal?: AbortSignal;
}

export type StopReason = "end" | "tool_use" | "max_tokens" | "other";

export interface LlmResponse {
  text: string;
  tool_calls: ToolCall[];
  usage: Usage;
  stop_reason: StopReason;
  /** The model name the provider reports having used. */
  model: string;
}

/** What a provider plugin hands the kernel for one model setting. */
export interface LlmDriver {
  readonly provider: string;
  /**
   * One call to the model. Streams when `request.onDelta` is given. Must honour `request.signal`,
   * never retry by itself, and fail with `providerError(...)` (the kernel retries and times out).
   */
  complete(request: LlmRequest): Promise<LlmResponse>;
  /** A cheap authenticated request (e.g. list models) for `spar doctor`; resolves to a short detail. */
  probe(signal: AbortSignal): Promise<string>;
  /**
   * Embeds texts: one vector per input, in order (`checkEmbeddings` refuses a reply that is not).
   * Absent when the provider has no embeddings API (Anthropic). Same rules as `complete`: honour
   * `request.signal`, never retry, fail with `providerError(...)`; the kernel batches, retries and
   * times out (`ring.llm.embed`).
   */
  embed?(request: EmbedRequest): Promise<EmbedResponse>;
}

/**
 * One call to an embedding model (`LlmDriver.embed`). `dimensions` asks a model that can shorten its
 * vectors for that many; `purpose` tells a model that embeds a query and a document differently
 * (Gemini's task types) which one this is; the others ignore it.
 *
 * @example
 * const { vectors } = await driver.embed({ model: "text-embedding-3-small", input: ["Ada moved to Lisbon"] });
 */
export interface EmbedRequest {
  model: string;
  input: string[];
  dimensions?: number;
  purpose?: "document" | "query";
  signal?: AbortSignal;
}

/** `vectors[i]` embeds `input[i]`; all of one length (`dimensions` when it was asked for). */
export interface EmbedResponse {
  vectors: number[][];
  usage?: { input_tokens: number };
}

/**
 * The key the kernel lets a driver send for one model setting (see lib/provider-keys.ts), and the
 * variable it was read from. Empty when no key may be sent. Drivers use this, never the environment.
 */
export interface ProviderCredential {
  /** The variable the key came from, for messages ("set X"); never the key itself. */
  key_env?: string;
  api_key?: string;
}

/** A provider as a plugin manifest declares it in `contributes.providers`. */
export interface ProviderDeclaration {
  id: string;
  /** Variables that may hold the key, tried in order; absent for providers that need none. */
  key_env?: string[];
  /** Whether a model setting must give `base_url` (e.g. openai_compatible). */
  requires_base_url?: boolean;
  /**
   * Context windows of its models, for settings that give no `context_window`: the first whose
   * `match` (a regular expression) matches the lowercased model name without a `vendor/` prefix.
   */
  context_windows?: { match: string; tokens: number }[];
  /** Prices of its models (lib/pricing.ts); `[[pricing]]` in config.toml overrides or adds. */
  pricing?: ModelPrice[];
}

/**
 * One model's price as a provider's manifest ships it, in `currency` per million tokens, with the
 * date it was read and the page it was read from. `model` is an exact model id (a dated snapshot
 * `-YYYYMMDD` / `-YYYY-MM-DD` of it is priced the same unless it has an entry of its own), or `*`
 * for every model of the provider without one; `local_only`: only for a `base_url` on loopback.
 * Cached input defaults to the input price, cache writes to the input price.
 */
export interface ModelPrice {
  model: string;
  input_per_mtok: number;
  output_per_mtok: number;
  cached_input_per_mtok?: number;
  cache_write_per_mtok?: number;
  currency: "USD";
  as_of: string;
  source: string;
  local_only?: boolean;
}

/** What the agent loop tells a move about the call it is running. */
export interface MoveContext {
  fighter: FighterRow;
  bout_id: string;
  turn_id: string;
  /** Who started the turn's bout (lib/bout-origins.ts): `user`, `channel:<platform>:<chat>`, … */
  origin: string;
  /** Fires when the turn is cancelled or the move's time is up: stop, and let the call settle. */
  signal: AbortSignal;
  /**
   * Ids of the fighters waiting on this turn, this fighter's last. Pass it (and `signal`) on when the
   * move messages another fighter, so a call back into the chain is refused instead of waiting.
   */
  chain: readonly string[];
  /** The fighter's grants that allow this move (`full_access` included): check scope, pattern, hosts here. */
  grants: readonly Capability[];
  /**
   * The fighters whose turns wait on this one (it was started by `fighter_message` or `message-to`),
   * outermost first, each with its own grants that allow this move; empty for a user's turn. A call
   * is allowed only when `grants` allows it AND every caller's `grants` does: a move that checks
   * scope, pattern or hosts checks them against every set (see `MoveCaller`).
   *
   * @example
   * const sets = [context.grants, ...context.callers.map((c) => c.grants)];
   * if (!sets.every((grants) => allows(grants, input))) throw new SparError("CAPABILITY_DENIED", "…");
   */
  callers: readonly MoveCaller[];
  /** The fighter's own folder, `<data dir>/workspaces/<fighter name>/`, created on first use. */
  workspace: string;
  /**
   * The untrusted content the turn has taken in before this call, oldest first (`MoveCallInfo.taint`);
   * empty when none. A move that hands the turn's work on (`fighter_message`) passes it on.
   */
  taint: readonly TaintSource[];
  /**
   * Marks this call's result as untrusted content (a web page, an MCP tool's answer, a file the
   * fighter did not write): the turn is tainted by `source` from the next call on. Call it once the
   * content is in hand, before returning or throwing (an error's text may carry it too); the first
   * call counts.
   *
   * @example
   * context.untrusted({ kind: "web", detail: url, move: "web_fetch" });
   */
  untrusted(source: TaintSource): void;
}

/**
 * A fighter in a turn's call chain (it messaged this fighter, directly or through others). A fighter
 * gains no privilege by asking another: the kernel refuses a move whose capability a caller does not
 * hold at all, and hands the move each caller's matching grants so it can hold their fields too.
 */
export interface MoveCaller {
  id: string;
  name: string;
  /** Its grants that allow the move being called (`full_access` included); empty when none does. */
  grants: readonly Capability[];
  /** All its grants: what a move that also reaches beyond its own capability (the network) checks. */
  capabilities: readonly Capability[];
}

/** A move's code: run with validated input, return text (or a JSON-able value) for the model. */
export interface MoveHandler {
  readonly name: string;
  run(input: Record<string, unknown>, context: MoveContext): Promise<unknown>;
}

/**
 * What a move may change, as its declaration says (the approvals policy reads it): `read` nothing
 * (no side effect), `workspace` files inside the fighter's own workspace only, `external` anything
 * else (a process, a message, a fighter, a schedule, another system). A move that declares none is
 * `external`.
 */
export type MoveEffects = "read" | "workspace" | "external";

/**
 * Where untrusted content entered a turn (content the operator did not write): a web page, an MCP
 * tool's result, a file the fighter did not write, a channel message from a stranger, another
 * fighter's tainted turn, a skill installed from a URL. A turn holding any is *tainted*: the
 * approvals policy asks before its side effects outside the workspace.
 *
 * @example
 * const source: TaintSource = { kind: "web", detail: "https://example.com/page", move: "web_fetch" };
 */
export interface TaintSource {
  kind: "web" | "mcp" | "file" | "channel" | "fighter" | "skill";
  /** What it was, for people: a URL, `<server>/<tool>`, a path, `<platform>:<chat>:<sender>`, a fighter. */
  detail: string;
  /** The move whose result brought it in, when one did. */
  move?: string;
}

/** A move as declared in a plugin manifest's `contributes.moves`, or offered at run time by `move.list`. */
export interface MoveDeclaration {
  name: string;
  description: string;
  capability: string;
  input_schema: Record<string, unknown>;
  /** For moves of one server (MCP): a grant naming a `server` allows only that server's moves. */
  server?: string;
  /** What a call may change; `external` when absent. */
  effects?: MoveEffects;
  /**
   * A call may destroy or overwrite what it reaches, or nobody said it cannot (an MCP tool marked
   * `destructiveHint`, or one without annotations): the approvals policy asks first by default.
   */
  destructive?: boolean;
}

/** A skill as listings show it (`GET /api/v1/moves`, `spar move list`): its front matter and origin. */
export interface SkillListing {
  name: string;
  description: string;
  version: string;
  category: string;
  tags: string[];
  moves: string[];
  capabilities: string[];
  /** `bundled` (a skill pack) or `installed` (`<data dir>/skills/`). */
  source: "bundled" | "installed";
}

export type {
  PluginRoute,
  PublicAssets,
  RouteRegistry,
  RouteRequest,
  RouteResponse,
  WebhookDelivery,
} from "./routes.js";
