/**
 * `[channels.discord]` as the manifest's schema leaves it (defaults filled in), and the two secrets
 * it names: the bot token and the application's public key, read from the environment (the daemon
 * loads `<data dir>/.env` first). A missing or malformed secret stops the daemon at start, naming
 * the variable and never its value.
 */
import type { KeyObject } from "node:crypto";
import { SparError } from "../../sdk/index.js";
import { discordPublicKey } from "../../sdk/kits/channels.js";

export interface DiscordSettings {
  token_env: string;
  public_key_env: string;
  /** The application's id; asked of Discord (`GET /applications/@me`) when absent. */
  application_id?: string;
  /** User ids (snowflakes) the bot answers. */
  allowlist: string[];
  /** Whose messages are the operator's own (the allowlist's form); anyone else's taint the turn. */
  owners: string[];
  fighter: string;
  /** Discord's root: REST is `<api_root>/api/v10/…`. */
  api_root: string;
  /** The interactions endpoint's path on the webhook listener. */
  path: string;
  rate_per_minute: number;
  /** The channel `channel_notify` posts to by default. */
  notify_chat?: string;
}

export interface DiscordSecrets {
  token: string;
  /** The application's Ed25519 key, which signs every interaction Discord sends. */
  publicKey: KeyObject;
}

/** The secrets `settings` names, from `env`; throws CONFIG_INVALID naming the variable at fault. */
export function readSecrets(settings: DiscordSettings, env: NodeJS.ProcessEnv): DiscordSecrets {
  const token = env[settings.token_env]?.trim();
  if (!token) throw missing(settings.token_env, "token_env", "the bot token");
  const hex = env[settings.public_key_env]?.trim();
  if (!hex) throw missing(settings.public_key_env, "public_key_env", "the application's public key");
  try {
    return { token, publicKey: discordPublicKey(hex) };
  } catch {
    throw new SparError(
      "CONFIG_INVALID",
      `[channels.discord] ${settings.public_key_env} does not hold a Discord public key: it is 64 hexadecimal ` +
        "characters, the application's Public Key on the Developer Portal's General Information page. " +
        "Run: spar channel setup discord",
      { path: "channels.discord.public_key_env" },
    );
  }
}

function missing(variable: string, key: string, what: string): SparError {
  return new SparError(
    "CONFIG_INVALID",
    `[channels.discord] ${what} is read from the environment variable ${variable}, which is not set ` +
      "(nor in <data dir>/.env). Run: spar channel setup discord",
    { path: `channels.discord.${key}` },
  );
}
