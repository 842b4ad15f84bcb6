import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parse as parseToml } from "smol-toml";
import { isReservedVariable } from "../lib/provider-keys.js";
import { SparError } from "./errors.js";
import { findForbiddenKey, forbiddenKeyMessage } from "./safe-keys.js";
import { formatSchemaErrors, validatorWithDefaults } from "./schema.js";
import type { ModelSettings } from "./types.js";

export interface RoutingConfig {
  enabled: boolean;
  cheap?: ModelSettings;
  mid?: ModelSettings;
  expensive?: ModelSettings;
}

export interface CompactionConfig {
  strategy: string;
  threshold_percent: number;
  keep_recent: number;
}

export interface DecayConfig {
  rate_per_day: number;
  reinforce_on_access: number;
  forget_below: number;
}

/** An endpoint the operator pairs with a key (or with none), which fighter manifests may then name. */
export interface EndpointPairing {
  provider: string;
  base_url?: string;
  api_key_env?: string;
}

/**
 * The daemon's configuration after defaults are applied: the kernel's own keys (DESIGN §8) and the
 * tables plugins own (`sections`).
 */
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
    /** A tool result longer than this many characters reaches the model cut, with a marker saying so. */
    max_tool_result_chars: number;
  };
  memory: { compaction: CompactionConfig; decay: DecayConfig };
  /** Per-fighter defaults; a manifest's `quota` overrides them. `window_s` is the sliding window. */
  quotas: { requests_per_minute: number; tokens_per_minute: number; window_s: number };
  plugins: {
    enable: string[];
    disable: string[];
    dirs: string[];
    store: string;
    bus: string;
    arena: string;
    scheduler: string;
    troops: string;
    tunnel: string;
  };
  /** Where provider keys may be sent besides `default_model` and the tiers (lib/provider-keys.ts). */
  providers: { endpoints: EndpointPairing[]; allow_manifest_base_url: string[] };
  /**
   * The tables plugins own, by path (`api`, `channels.telegram`, `moves-dice`), each checked against
   * its owner's schema, defaults applied, before any plugin code runs (config-sections.ts).
   */
  sections: Record<string, Record<string, unknown>>;
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
      }),
      decay: table({
        rate_per_day: num(0.05, { minimum: 0 }),
        reinforce_on_access: num(0.2, { minimum: 0 }),
        forget_below: num(0.05, { minimum: 0 }),
      }),
    }),
    providers: table({
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

const CORE_KEYS = new Set(Object.keys(CONFIG_SCHEMA.properties));

/** Parses a `host:port` listen address; IPv6 hosts come in brackets (`[::1]:6660`). */
export function parseListen(value: string, key = "api_listen"): { host: string; port: number } {
  const at = value.lastIndexOf(":");
  const host = value.slice(0, at).replace(/^\[(.*)\]$/, "$1");
  const port = Number(value.slice(at + 1));
  if (at <= 0 || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new SparError("CONFIG_INVALID", `${key} must be host:port, got "${value}"`);
  }
  return { host, port };
}

/**
 * Reads `<home>/config.toml` (absent means all defaults), checks the kernel's keys with their paths,
 * applies environment overrides (`SPAR_API_LISTEN`) and keeps every other table in `sections` for
 * its owning plugin: `checkSections` (config-sections.ts) refuses the ones nobody owns.
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
  const sections: Record<string, Record<string, unknown>> = {};
  for (const [key, value] of Object.entries(raw)) {
    if (CORE_KEYS.has(key)) core[key] = value;
    else if (isTable(value)) sections[key] = value;
    else throw new SparError("CONFIG_INVALID", `${path}: unknown key "${key}"`, { path: key });
  }
  const validate = validatorWithDefaults(CONFIG_SCHEMA);
  if (!validate(core)) {
    throw new SparError("CONFIG_INVALID", `${path}: ${formatSchemaErrors(validate.errors, "")}`);
  }
  const config = { ...(core as Omit<SparConfig, "sections">), sections };
  if (env.SPAR_API_LISTEN) config.api_listen = env.SPAR_API_LISTEN;
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

export function isTable(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
