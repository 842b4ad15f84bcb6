/** The daemon's configuration as plugins are handed it (kernel/host/config.ts loads and checks it). */
import { SparError } from "./errors.js";
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
  /** Before compacting, save the durable facts of what is compacted to memory (`compaction.flush`). */
  flush_facts: boolean;
}

export interface DecayConfig {
  rate_per_day: number;
  reinforce_on_access: number;
  forget_below: number;
}

/**
 * `[memory.embeddings]`: the model that embeds memories for recall by meaning. Absent (no table):
 * recall is words only. Its `base_url` and `api_key_env` pair like any endpoint (lib/provider-keys.ts).
 *
 * @example
 * const settings: ModelSettings = { provider: embeddings.provider, model: embeddings.model };
 */
export interface EmbeddingsConfig {
  /** A provider whose plugin embeds: openai, openai_compatible, openrouter, ollama, google. */
  provider: string;
  model: string;
  base_url?: string;
  api_key_env?: string;
  /** Ask the model for vectors this long (8..4096), when it can shorten them. */
  dimensions?: number;
  /** Texts per call (1..96); default 64. */
  batch_size: number;
  /** The cosine similarity a neighbour must pass to count for recall (0..1); default 0.2. */
  min_similarity: number;
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
  memory: { compaction: CompactionConfig; decay: DecayConfig; embeddings?: EmbeddingsConfig };
  /** Per-fighter defaults; a manifest's `quota` overrides them. `window_s` is the sliding window. */
  quotas: { requests_per_minute: number; tokens_per_minute: number; window_s: number };
  /**
   * Containment of every process a move starts (lib/sandbox): the mode, the limits a runaway cannot
   * pass, and the operator's exceptions to the egress address rules.
   */
  sandbox: SandboxConfig;
  /** `[logs]`: the daemon's JSON log in `<data dir>/logs/` (lib/log-file.ts). */
  logs: LogsConfig;
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
  /** `[[pricing]]`: prices that override or add to the providers' shipped ones (lib/pricing.ts). */
  pricing: PricingOverride[];
  /**
   * Where provider keys may be sent besides `default_model` and the tiers (lib/provider-keys.ts), and
   * each provider's own settings, `[providers.<name>]` (lib/prompt-cache.ts reads them).
   */
  providers: ProvidersConfig;
  /**
   * The tables plugins own, by path (`api`, `channels.telegram`, `moves-dice`), each checked against
   * its owner's schema, defaults applied, before any plugin code runs (config-sections.ts).
   */
  sections: Record<string, Record<string, unknown>>;
}

/** `[providers]` in config.toml. */
export interface ProvidersConfig {
  endpoints: EndpointPairing[];
  allow_manifest_base_url: string[];
  /** `[providers.<name>]`, by provider id. */
  [provider: string]: ProviderSettings | EndpointPairing[] | string[];
}

/** `[providers.<name>]`: one provider's settings. */
export interface ProviderSettings {
  /** Use the provider's prompt cache (README "Prompt caching"). Default true. */
  prompt_cache?: boolean;
}

/** One `[[pricing]]` entry: a model's price in USD per million tokens (`model = "*"`: the provider's others). */
export interface PricingOverride {
  provider: string;
  model: string;
  input_per_mtok: number;
  output_per_mtok: number;
  cached_input_per_mtok?: number;
  cache_write_per_mtok?: number;
}

/** `[logs]` in config.toml. */
export interface LogsConfig {
  /** The least severe level written to the file (and echoed on the terminal). */
  level: "info" | "warn" | "error";
  /** Rotate spar.log once it reaches this size: a number and B, K, M or G (`"10M"`). */
  max_size: string;
  /** Rotated files kept beside spar.log (spar.log.1 … spar.log.<files>); older ones are deleted. */
  files: number;
}

/** `[sandbox]` in config.toml. */
export interface SandboxConfig {
  /** `required` (default): refuse to run a process when no sandbox is available; `off`: run unsandboxed. */
  mode: "required" | "off";
  /** CPU seconds a process may use (RLIMIT_CPU). */
  cpu_s: number;
  /** Address space of one process, in MiB (RLIMIT_AS). */
  memory_mb: number;
  /** Processes in one sandbox at once. */
  processes: number;
  /** Largest file a process may write, in MiB (RLIMIT_FSIZE). */
  file_size_mb: number;
  /** What the sandbox's in-memory /tmp and $HOME may each hold, in MiB. */
  tmp_mb: number;
  /** Open files of one process (RLIMIT_NOFILE). */
  open_files: number;
  /** Private addresses the egress proxy may reach after all (the `allow_private` rules of web_fetch). */
  allow_private: string[];
}

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
