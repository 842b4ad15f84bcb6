import { generateKeyPairSync, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "smol-toml";
import { loadConfig } from "../../kernel/host/config.js";
import { MASTER_KEY_FILE, withDotEnv } from "../../lib/home.js";
import { LOCAL_RUNNER } from "../../sdk/schemas.js";
import type { ModelSettings } from "../../sdk/types.js";

/** The provider `spar init` picks from the keys it finds, in this order (DESIGN §7). */
const PROVIDER_BY_KEY: { env: string; settings: ModelSettings }[] = [
  {
    env: "OPENAI_API_KEY",
    settings: { provider: "openai", model: "gpt-4o-mini", api_key_env: "OPENAI_API_KEY" },
  },
  {
    env: "ANTHROPIC_API_KEY",
    settings: { provider: "anthropic", model: "claude-3-5-haiku-latest", api_key_env: "ANTHROPIC_API_KEY" },
  },
  {
    env: "GEMINI_API_KEY",
    settings: { provider: "google", model: "gemini-2.0-flash", api_key_env: "GEMINI_API_KEY" },
  },
  {
    env: "GOOGLE_API_KEY",
    settings: { provider: "google", model: "gemini-2.0-flash", api_key_env: "GOOGLE_API_KEY" },
  },
  {
    env: "OPENROUTER_API_KEY",
    settings: { provider: "openrouter", model: "openai/gpt-4o-mini", api_key_env: "OPENROUTER_API_KEY" },
  },
];

export function chooseDefaultModel(env: NodeJS.ProcessEnv): ModelSettings {
  return PROVIDER_BY_KEY.find((p) => env[p.env])?.settings ?? { ...LOCAL_RUNNER };
}

export interface InitResult {
  home: string;
  created: string[];
  /** The config's default model: for a new config, the one chosen from the keys found. */
  default_model: ModelSettings;
}

/**
 * Creates the data dir (0700), `config.toml`, the master key (0600, unless `SPAR_MASTER_KEY` is
 * set) and the CLI's Ed25519 key pair under `keys/` (0600), authorizing its public key. Creates
 * only what is missing and never overwrites a file, so `spar start` runs it every time.
 */
export function initHome(home: string, startEnv: NodeJS.ProcessEnv = process.env): InitResult {
  const created: string[] = [];
  mkdirSync(home, { recursive: true, mode: 0o700 });
  // Read, never copied into process.env: `spar start --detach` starts the daemon with this process's.
  const env = withDotEnv(home, startEnv);
  const defaultModel = chooseDefaultModel(env);

  const write = (name: string, data: string | Buffer, mode: number) => {
    const path = join(home, name);
    if (existsSync(path)) return;
    writeFileSync(path, data, { mode, flag: "wx" });
    created.push(name);
  };

  const config =
    "# Spar configuration. Every key is documented in the README; unknown keys are an error.\n" +
    `api_listen = "127.0.0.1:6660"\n\n` +
    stringify({ default_model: defaultModel, agent: { max_iterations: 25, tool_timeout_s: 120 } }) +
    "\n";
  write("config.toml", config, 0o600);
  // A database without its key must stay unreadable, not get a fresh key that can never open it.
  if (!env.SPAR_MASTER_KEY && !existsSync(join(home, "spar.db")))
    write(MASTER_KEY_FILE, randomBytes(32), 0o600);

  mkdirSync(join(home, "keys", "authorized"), { recursive: true, mode: 0o700 });
  if (!existsSync(join(home, "keys", "cli.key"))) {
    const { privateKey, publicKey } = generateKeyPairSync("ed25519");
    write(join("keys", "cli.key"), privateKey.export({ type: "pkcs8", format: "pem" }).toString(), 0o600);
    const pub = publicKey.export({ type: "spki", format: "pem" }).toString();
    write(join("keys", "cli.pub"), pub, 0o644);
    write(join("keys", "authorized", "cli.pub"), pub, 0o600);
  }
  mkdirSync(join(home, "plugins"), { recursive: true, mode: 0o700 });
  // What the config says, which on an existing home may not be what the environment suggests.
  return { home, created, default_model: loadConfig(home, env).default_model };
}
