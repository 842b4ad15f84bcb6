/**
 * The JSON Schemas of what users and plugins write: config.toml's kernel keys (with their defaults),
 * model settings, and fighter manifests with the kernel's capability types. kernel/host/config.ts and
 * kernel/fighters/fighter-manifest.ts check against them; `npm run build` precompiles them (schema.ts).
 */
import type { ModelSettings } from "./types.js";

export const LOCAL_RUNNER: ModelSettings = {
  provider: "ollama",
  model: "llama3.2",
  base_url: "http://127.0.0.1:11434",
};

export const MODEL_SETTINGS_SCHEMA = {
  type: "object",
  additionalProperties: false,
  required: ["provider", "model"],
  properties: {
    provider: { type: "string", minLength: 1 },
    model: { type: "string", minLength: 1 },
    base_url: { type: "string", pattern: "^https?://", description: "an http:// or https:// URL" },
    api_key_env: {
      type: "string",
      pattern: "^[A-Za-z_][A-Za-z0-9_]*$",
      description: "the name of an environment variable (letters, digits and _)",
    },
    max_tokens: { type: "integer", minimum: 1 },
    temperature: { type: "number", minimum: 0, maximum: 2 },
    context_window: { type: "integer", minimum: 256 },
    timeout_s: { type: "number", exclusiveMinimum: 0, maximum: 3600 },
    max_retries: { type: "integer", minimum: 0, maximum: 10 },
  },
} as const;

/**
 * `[memory.embeddings] batch_size`: texts per embedding call by default, and at most (OpenAI takes
 * 2,048 inputs a call, Gemini's batchEmbedContents 100: 96 fits every provider).
 */
export const DEFAULT_EMBED_BATCH = 64;
export const MAX_EMBED_BATCH = 96;

/** A table of the config: unknown keys refused, present even when empty (so its defaults apply). */
const table = (properties: Record<string, object>) =>
  ({ type: "object", additionalProperties: false, default: {}, properties }) as const;
const int = (minimum: number, value: number, maximum?: number) => ({
  type: "integer",
  minimum,
  ...(maximum ? { maximum } : {}),
  default: value,
});
const num = (value: number, bounds: object) => ({ type: "number", ...bounds, default: value });
const strings = (item: object = { type: "string" }) => ({ type: "array", items: item, default: [] });

/** The name of a `[providers.<name>]` table: a provider id, not one of [providers]' own keys. */
export const PROVIDER_TABLE = "^(?!endpoints$|allow_manifest_base_url$)[a-z][a-z0-9_]*$";

/** A price in USD per million tokens: none is negative, and none near a thousand is a real one. */
export const MAX_PRICE_PER_MTOK = 1000;
const PRICE = { type: "number", minimum: 0, maximum: MAX_PRICE_PER_MTOK } as const;

/** A budget's limits: money in the `[budgets]` currency, tokens; none negative, none absurd. */
export const MAX_BUDGET_MONEY = 1_000_000;
export const MAX_BUDGET_TOKENS = 1_000_000_000_000;
export const BUDGET_SCHEMA = {
  type: "object",
  additionalProperties: false,
  properties: {
    daily: { type: "number", minimum: 0, maximum: MAX_BUDGET_MONEY },
    monthly: { type: "number", minimum: 0, maximum: MAX_BUDGET_MONEY },
    daily_tokens: { type: "integer", minimum: 0, maximum: MAX_BUDGET_TOKENS },
    monthly_tokens: { type: "integer", minimum: 0, maximum: MAX_BUDGET_TOKENS },
    on_exceed: { enum: ["stop", "ask"] },
  },
} as const;

/**
 * The key of a budget's limits that is not a finite number within bounds (TOML's `nan` and `inf`
 * pass a JSON Schema's bounds), or undefined when all are.
 *
 * @example
 * badBudgetKey({ daily: Number.NaN }); // "daily"
 */
export function badBudgetKey(limits: Record<string, unknown>): string | undefined {
  for (const key of ["daily", "monthly", "daily_tokens", "monthly_tokens"]) {
    const value = limits[key];
    if (value === undefined) continue;
    const max = key.endsWith("_tokens") ? MAX_BUDGET_TOKENS : MAX_BUDGET_MONEY;
    if (typeof value !== "number" || !Number.isFinite(value) || value < 0 || value > max) return key;
  }
  return undefined;
}

export const CONFIG_SCHEMA = {
  type: "object",
  additionalProperties: false,
  properties: {
    api_listen: {
      type: "string",
      pattern: "^(\\[[0-9a-fA-F:.]+\\]|[^:\\s]+):[0-9]{1,5}$",
      description: "host:port, like 127.0.0.1:6660 ([::1]:6660 for IPv6)",
      default: "127.0.0.1:6660",
    },
    default_model: { ...MODEL_SETTINGS_SCHEMA, default: LOCAL_RUNNER },
    model_routing: table({
      enabled: { type: "boolean", default: false },
      cheap: MODEL_SETTINGS_SCHEMA,
      mid: MODEL_SETTINGS_SCHEMA,
      expensive: MODEL_SETTINGS_SCHEMA,
    }),
    agent: table({
      max_iterations: int(1, 25, 1000),
      tool_timeout_s: num(120, { exclusiveMinimum: 0 }),
      loop_guard_repeats: int(2, 4),
      max_call_depth: int(1, 4, 32),
      max_tool_result_chars: int(1000, 20_000, 1_000_000),
    }),
    quotas: table({
      requests_per_minute: int(1, 60),
      tokens_per_minute: int(1, 200_000),
      window_s: num(60, { exclusiveMinimum: 0, maximum: 3600 }),
    }),
    memory: table({
      compaction: table({
        strategy: {
          type: "string",
          pattern: "^[a-z0-9_]+$",
          description: "a compaction strategy's name (summarize, truncate)",
          default: "summarize",
        },
        threshold_percent: num(80, { exclusiveMinimum: 0, maximum: 100 }),
        keep_recent: int(1, 20),
        flush_facts: { type: "boolean", default: true },
      }),
      decay: table({
        rate_per_day: num(0.05, { minimum: 0 }),
        reinforce_on_access: num(0.2, { minimum: 0 }),
        forget_below: num(0.05, { minimum: 0 }),
      }),
      // No default: absent, recall is words only (config.memory.embeddings undefined).
      embeddings: {
        type: "object",
        additionalProperties: false,
        required: ["provider", "model"],
        properties: {
          provider: MODEL_SETTINGS_SCHEMA.properties.provider,
          model: MODEL_SETTINGS_SCHEMA.properties.model,
          base_url: MODEL_SETTINGS_SCHEMA.properties.base_url,
          api_key_env: MODEL_SETTINGS_SCHEMA.properties.api_key_env,
          dimensions: { type: "integer", minimum: 8, maximum: 4096 },
          batch_size: int(1, DEFAULT_EMBED_BATCH, MAX_EMBED_BATCH),
          min_similarity: num(0.2, { minimum: 0, maximum: 0.99 }),
        },
      },
    }),
    pricing: strings({
      type: "object",
      additionalProperties: false,
      required: ["provider", "model", "input_per_mtok", "output_per_mtok"],
      properties: {
        provider: MODEL_SETTINGS_SCHEMA.properties.provider,
        model: { type: "string", minLength: 1 },
        input_per_mtok: PRICE,
        output_per_mtok: PRICE,
        cached_input_per_mtok: PRICE,
        cache_write_per_mtok: PRICE,
      },
    }),
    providers: {
      ...table({}),
      // `[providers.<name>]`: one provider's own settings (the other keys of [providers] excepted).
      patternProperties: {
        [PROVIDER_TABLE]: {
          type: "object",
          additionalProperties: false,
          properties: { prompt_cache: { type: "boolean" } },
        },
      },
      properties: {
        endpoints: strings({
          type: "object",
          additionalProperties: false,
          required: ["provider"],
          properties: {
            provider: MODEL_SETTINGS_SCHEMA.properties.provider,
            base_url: MODEL_SETTINGS_SCHEMA.properties.base_url,
            api_key_env: MODEL_SETTINGS_SCHEMA.properties.api_key_env,
          },
        }),
        allow_manifest_base_url: strings({ type: "string", pattern: "^https?://" }),
      },
    },
    sandbox: table({
      mode: {
        enum: ["required", "off"],
        description:
          "required: every process a move starts runs in the sandbox, or not at all; off: unsandboxed (an audit HIGH)",
        default: "required",
      },
      cpu_s: int(1, 60, 86_400),
      memory_mb: int(64, 8192, 1_048_576),
      processes: int(8, 256, 65_536),
      file_size_mb: int(1, 512, 1_048_576),
      tmp_mb: int(1, 512, 1_048_576),
      open_files: int(16, 1024, 1_048_576),
      allow_private: strings(),
    }),
    // The daemon's JSON log, <data dir>/logs/spar.log (lib/log-file.ts): what it keeps, how much.
    logs: table({
      level: {
        enum: ["info", "warn", "error"],
        description: "the least severe level written",
        default: "info",
      },
      max_size: {
        type: "string",
        pattern: "^[1-9][0-9]*[BKMG]$",
        description: "the size at which spar.log is rotated: a number and B, K, M or G (10M)",
        default: "10M",
      },
      files: int(1, 5, 100),
    }),
    plugins: table({
      enable: strings(),
      disable: strings(),
      dirs: strings(),
      store: { type: "string", default: "store-sqlite" },
      bus: { type: "string", default: "bus-local" },
      arena: { type: "string", default: "arena-http" },
      scheduler: { type: "string", default: "scheduler-croner" },
      troops: { type: "string", default: "troops-local" },
      tunnel: { type: "string", default: "tunnel-cloudflared" },
    }),
  },
} as const;

/** The kernel's own capability types; an installed plugin's move may declare more. */
export const CAPABILITY_TYPES = [
  "memory",
  "knowledge_graph",
  "file_read",
  "file_write",
  "shell_exec",
  "network",
  "agent_message",
  "agent_spawn",
  "channel_notify",
  "schedule",
  "desktop",
  "mcp",
  "full_access",
] as const;

const oneOrMany = { anyOf: [{ type: "string" }, { type: "array", items: { type: "string" } }] };

/** A `channel_notify` target: a platform id, a colon, a chat id (or a Telegram channel's @name). */
const TARGET_PATTERN = "^[a-z0-9_-]{1,32}:[^\\s:]{1,128}$";

export const FIGHTER_MANIFEST_SCHEMA = {
  type: "object",
  additionalProperties: false,
  required: ["name", "description", "system_prompt"],
  properties: {
    name: { type: "string", minLength: 1, maxLength: 64 },
    description: { type: "string", maxLength: 1000 },
    system_prompt: { type: "string", minLength: 1, maxLength: 100_000 },
    model: MODEL_SETTINGS_SCHEMA,
    weight_class: { enum: ["flyweight", "lightweight", "middleweight", "heavyweight"] },
    capabilities: {
      type: "array",
      maxItems: 64,
      items: {
        type: "object",
        additionalProperties: false,
        required: ["type"],
        properties: {
          type: {
            type: "string",
            pattern: "^[a-z][a-z0-9_]*$",
            description: "a capability's name (lowercase letters, digits and _)",
          },
          scope: oneOrMany,
          pattern: oneOrMany,
          hosts: oneOrMany,
          server: { type: "string" },
          approval: {
            enum: ["ask", "deny"],
            description:
              "what a call this grant allows needs before it runs: ask (the operator answers first) or deny (never); absent: the [approvals] rules and defaults decide",
          },
          targets: {
            description:
              'channel_notify: the chats it may post to besides those that wrote to the fighter through an allowlist, each "<platform>:<chat>" like "telegram:-1001234567890" or "slack:C012AB3CDE"',
            anyOf: [
              { type: "string", pattern: TARGET_PATTERN },
              { type: "array", maxItems: 100, items: { type: "string", pattern: TARGET_PATTERN } },
            ],
          },
        },
      },
    },
    skills: { type: "array", maxItems: 200, items: { type: "string", minLength: 1 } },
    quota: {
      type: "object",
      additionalProperties: false,
      properties: {
        requests_per_minute: { type: "integer", minimum: 1 },
        tokens_per_minute: { type: "integer", minimum: 1 },
      },
    },
    max_iterations: { type: "integer", minimum: 1, maximum: 1000 },
    budget: BUDGET_SCHEMA,
  },
} as const;
