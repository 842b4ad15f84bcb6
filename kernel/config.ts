import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parse as parseToml } from "smol-toml";
import type { CompactionConfig } from "./compaction.js";
import type { CreedConfig } from "./creed.js";
import { SparError } from "./errors.js";
import type { DecayConfig } from "./memory.js";
import { isReservedVariable } from "./provider-check.js";
import type { RoutingConfig } from "./routing.js";
import { findForbiddenKey, forbiddenKeyMessage } from "./safe-keys.js";
import { formatSchemaErrors, validatorFor } from "./schema.js";
import type { ModelSettings } from "./types.js";

/** The daemon's configuration after defaults are applied. Keys follow DESIGN §8. */
export interface SparConfig {
  api_listen: string;
  default_model: ModelSettings;
  model_routing: RoutingConfig;
  agent: {
    max_iterations: number;
    tool_timeout_s: number;
    loop_guard_repeats: number;
    /** Turns in one fighter-to-fighter call chain at most (the first message's included). */
    max_call_depth: number;
  };
  memory: { compaction: CompactionConfig; decay: DecayConfig };
  /** Per-fighter defaults; a manifest's `quota` overrides them. `window_s` is the sliding window. */
  quotas: { requests_per_minute: number; tokens_per_minute: number; window_s: number };
  creed: CreedConfig;
  api: {
    body_limit_bytes: number;
    rate_limit_per_minute: number;
    cors_origins: string[];
    /** Open TCP connections to the API at once; more are closed on arrival. */
    max_connections: number;
    /** Open WebSockets from one peer address, and in total. */
    websocket_max_per_peer: number;
    websocket_max_total: number;
  };
  auth: { allow_unsigned_loopback: boolean };
  plugins: { enable: string[]; disable: string[]; dirs: string[]; store: string; arena: string };
  /** Where provider keys may be sent besides `default_model` and the tiers (kernel/provider-check.ts). */
  providers: { endpoints: EndpointPairing[]; allow_manifest_base_url: string[] };
  /** Sections keyed by plugin id, each validated against that plugin's `configSchema`. */
  plugin_settings: Record<string, Record<string, unknown>>;
}

/** An endpoint the operator pairs with a key (or with none), which fighter manifests may then name. */
export interface EndpointPairing {
  provider: string;
  base_url?: string;
  api_key_env?: string;
}

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
    base_url: { type: "string", pattern: "^https?://" },
    api_key_env: { type: "string", pattern: "^[A-Za-z_][A-Za-z0-9_]*$" },
    max_tokens: { type: "integer", minimum: 1 },
    temperature: { type: "number", minimum: 0, maximum: 2 },
    context_window: { type: "integer", minimum: 256 },
    timeout_s: { type: "number", exclusiveMinimum: 0, maximum: 3600 },
    max_retries: { type: "integer", minimum: 0, maximum: 10 },
  },
} as const;

const CONFIG_SCHEMA = {
  type: "object",
  additionalProperties: false,
  properties: {
    api_listen: { type: "string", pattern: "^(\\[[0-9a-fA-F:.]+\\]|[^:\\s]+):[0-9]{1,5}$" },
    default_model: MODEL_SETTINGS_SCHEMA,
    model_routing: {
      type: "object",
      additionalProperties: false,
      properties: {
        enabled: { type: "boolean" },
        cheap: MODEL_SETTINGS_SCHEMA,
        mid: MODEL_SETTINGS_SCHEMA,
        expensive: MODEL_SETTINGS_SCHEMA,
      },
    },
    agent: {
      type: "object",
      additionalProperties: false,
      properties: {
        max_iterations: { type: "integer", minimum: 1, maximum: 1000 },
        tool_timeout_s: { type: "number", exclusiveMinimum: 0 },
        loop_guard_repeats: { type: "integer", minimum: 2 },
        max_call_depth: { type: "integer", minimum: 1, maximum: 32 },
      },
    },
    quotas: {
      type: "object",
      additionalProperties: false,
      properties: {
        requests_per_minute: { type: "integer", minimum: 1 },
        tokens_per_minute: { type: "integer", minimum: 1 },
        window_s: { type: "number", exclusiveMinimum: 0, maximum: 3600 },
      },
    },
    memory: {
      type: "object",
      additionalProperties: false,
      properties: {
        compaction: {
          type: "object",
          additionalProperties: false,
          properties: {
            strategy: { type: "string", pattern: "^[a-z0-9_]+$" },
            threshold_percent: { type: "number", exclusiveMinimum: 0, maximum: 100 },
            keep_recent: { type: "integer", minimum: 1 },
          },
        },
        decay: {
          type: "object",
          additionalProperties: false,
          properties: {
            rate_per_day: { type: "number", minimum: 0 },
            reinforce_on_access: { type: "number", minimum: 0 },
            forget_below: { type: "number", minimum: 0 },
          },
        },
      },
    },
    creed: {
      type: "object",
      additionalProperties: false,
      properties: {
        reflect: { type: "boolean" },
        reflect_min_chars: { type: "integer", minimum: 0 },
        max_observations: { type: "integer", minimum: 0, maximum: 100 },
      },
    },
    api: {
      type: "object",
      additionalProperties: false,
      properties: {
        body_limit_bytes: { type: "integer", minimum: 1024 },
        rate_limit_per_minute: { type: "integer", minimum: 1 },
        cors_origins: { type: "array", items: { type: "string", pattern: "^https?://[^/\\s]+$" } },
        max_connections: { type: "integer", minimum: 16, maximum: 100_000 },
        websocket_max_per_peer: { type: "integer", minimum: 1, maximum: 100_000 },
        websocket_max_total: { type: "integer", minimum: 1, maximum: 100_000 },
      },
    },
    auth: {
      type: "object",
      additionalProperties: false,
      properties: { allow_unsigned_loopback: { type: "boolean" } },
    },
    providers: {
      type: "object",
      additionalProperties: false,
      properties: {
        endpoints: {
          type: "array",
          items: {
            type: "object",
            additionalProperties: false,
            required: ["provider"],
            properties: {
              provider: MODEL_SETTINGS_SCHEMA.properties.provider,
              base_url: MODEL_SETTINGS_SCHEMA.properties.base_url,
              api_key_env: MODEL_SETTINGS_SCHEMA.properties.api_key_env,
            },
          },
        },
        allow_manifest_base_url: { type: "array", items: { type: "string", pattern: "^https?://" } },
      },
    },
    plugins: {
      type: "object",
      additionalProperties: false,
      properties: {
        enable: { type: "array", items: { type: "string" } },
        disable: { type: "array", items: { type: "string" } },
        dirs: { type: "array", items: { type: "string" } },
        store: { type: "string" },
        arena: { type: "string" },
      },
    },
  },
} as const;

const CORE_KEYS = new Set(Object.keys(CONFIG_SCHEMA.properties));

/** Parses a `host:port` listen address; IPv6 hosts come in brackets (`[::1]:6660`). */
export function parseListen(value: string): { host: string; port: number } {
  const at = value.lastIndexOf(":");
  const host = value.slice(0, at).replace(/^\[(.*)\]$/, "$1");
  const port = Number(value.slice(at + 1));
  if (at <= 0 || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new SparError("CONFIG_INVALID", `api_listen must be host:port, got "${value}"`);
  }
  return { host, port };
}

/**
 * Reads `<home>/config.toml` (absent means all defaults), rejects unknown keys with their path and
 * applies environment overrides (`SPAR_API_LISTEN`). A table that is not a core key is kept as a
 * plugin's settings: the plugin loader refuses it unless a discovered plugin has that id.
 */
export function loadConfig(home: string, env = process.env): SparConfig {
  const path = join(home, "config.toml");
  let raw: Record<string, unknown> = {};
  if (existsSync(path)) {
    try {
      raw = parseToml(readFileSync(path, "utf8")) as Record<string, unknown>;
    } catch (err) {
      throw new SparError("CONFIG_INVALID", `${path}: ${(err as Error).message}`);
    }
  }
  const forbidden = findForbiddenKey(raw);
  if (forbidden)
    throw new SparError("CONFIG_INVALID", forbiddenKeyMessage(forbidden, path), { path: forbidden.path });
  const core: Record<string, unknown> = {};
  const pluginSettings: Record<string, Record<string, unknown>> = {};
  for (const [key, value] of Object.entries(raw)) {
    if (CORE_KEYS.has(key)) core[key] = value;
    else if (isTable(value)) pluginSettings[key] = value;
    else throw new SparError("CONFIG_INVALID", `${path}: unknown key "${key}"`, { path: key });
  }
  const validate = validatorFor(CONFIG_SCHEMA);
  if (!validate(core)) {
    throw new SparError("CONFIG_INVALID", `${path}: ${formatSchemaErrors(validate.errors, "")}`);
  }
  const c = core as Partial<{
    api_listen: string;
    default_model: ModelSettings;
    model_routing: Partial<RoutingConfig>;
    agent: Partial<SparConfig["agent"]>;
    memory: { compaction?: Partial<CompactionConfig>; decay?: Partial<DecayConfig> };
    quotas: Partial<SparConfig["quotas"]>;
    creed: Partial<CreedConfig>;
    api: Partial<SparConfig["api"]>;
    auth: Partial<SparConfig["auth"]>;
    plugins: Partial<SparConfig["plugins"]>;
    providers: Partial<SparConfig["providers"]>;
  }>;
  const config: SparConfig = {
    api_listen: env.SPAR_API_LISTEN || c.api_listen || "127.0.0.1:6660",
    default_model: c.default_model ?? { ...LOCAL_RUNNER },
    model_routing: { enabled: false, ...c.model_routing },
    agent: { max_iterations: 25, tool_timeout_s: 120, loop_guard_repeats: 4, max_call_depth: 4, ...c.agent },
    quotas: { requests_per_minute: 60, tokens_per_minute: 200_000, window_s: 60, ...c.quotas },
    memory: {
      compaction: { strategy: "summarize", threshold_percent: 80, keep_recent: 20, ...c.memory?.compaction },
      decay: { rate_per_day: 0.05, reinforce_on_access: 0.2, forget_below: 0.05, ...c.memory?.decay },
    },
    creed: { reflect: true, reflect_min_chars: 280, max_observations: 12, ...c.creed },
    api: {
      body_limit_bytes: 1_048_576,
      rate_limit_per_minute: 600,
      cors_origins: [],
      max_connections: 1024,
      websocket_max_per_peer: 32,
      websocket_max_total: 256,
      ...c.api,
    },
    auth: { allow_unsigned_loopback: true, ...c.auth },
    plugins: { enable: [], disable: [], dirs: [], store: "store-sqlite", arena: "arena-http", ...c.plugins },
    providers: { endpoints: [], allow_manifest_base_url: [], ...c.providers },
    plugin_settings: pluginSettings,
  };
  parseListen(config.api_listen);
  refuseReservedKeyVariables(path, config);
  return config;
}

/** `SPAR_*` variables hold Spar's own secrets (the master key): never a provider key, even by config. */
function refuseReservedKeyVariables(path: string, config: SparConfig): void {
  const named = [
    ["default_model", config.default_model.api_key_env],
    ...(["cheap", "mid", "expensive"] as const).map((t) => [
      `model_routing.${t}`,
      config.model_routing[t]?.api_key_env,
    ]),
    ...config.providers.endpoints.map((e, i) => [`providers.endpoints[${i}]`, e.api_key_env]),
  ];
  for (const [where, name] of named) {
    if (name && isReservedVariable(name)) {
      throw new SparError(
        "CONFIG_INVALID",
        `${path}: ${where}.api_key_env = "${name}": SPAR_* variables are Spar's own secrets and are never sent as a provider key`,
        { path: `${where}.api_key_env` },
      );
    }
  }
}

function isTable(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
