/**
 * The `[channels.telegram]` table as the manifest's schema leaves it (defaults filled in), and the
 * two secrets it names, read from the environment (the daemon has loaded `<data dir>/.env` into it).
 * Webhook mode refuses to start without a usable secret: a webhook anyone could call would let
 * anyone who learns the URL talk to the fighter as an allowed sender.
 */
import { SparError } from "../../sdk/index.js";

export interface TelegramSettings {
  token_env: string;
  webhook_secret_env: string;
  /** Numeric user ids (the schema refuses anything else). */
  allowlist: number[];
  /** Whose messages are the operator's own (the allowlist's form); anyone else's taint the turn. */
  owners: number[];
  fighter: string;
  api_root: string;
  path: string;
  rate_per_minute: number;
  notify_chat?: string | number;
}

export interface TelegramSecrets {
  token: string;
  /** Given to setWebhook as `secret_token`; Telegram sends it back in every delivery's header. */
  webhookSecret: string;
}

/** Telegram's rule for `secret_token`: 1–256 of these; Spar also wants at least 16 (guessing must be hopeless). */
const SECRET_CHARS = /^[A-Za-z0-9_-]+$/;
export const SECRET_MIN = 16;
export const SECRET_MAX = 256;
/** What a bot token may hold (digits, a colon, letters, digits, `_` and `-`): it goes into every API URL's path. */
const TOKEN_CHARS = /^[A-Za-z0-9:_-]+$/;

const SETUP = "run `spar channel setup telegram`";

function invalid(variable: string, problem: string): SparError {
  return new SparError("CONFIG_INVALID", `[channels.telegram] ${variable} ${problem}; ${SETUP}`, {
    path: "channels.telegram",
    variable,
  });
}

/**
 * The bot token and the webhook secret, checked. Throws CONFIG_INVALID naming the variable (never
 * its value) when one is missing or unusable.
 */
export function readSecrets(settings: TelegramSettings, env: NodeJS.ProcessEnv): TelegramSecrets {
  const token = env[settings.token_env]?.trim() ?? "";
  if (!token) throw invalid(settings.token_env, "is not set (it holds the bot token from @BotFather)");
  if (!TOKEN_CHARS.test(token)) {
    throw invalid(
      settings.token_env,
      "does not look like a bot token (digits, a colon, then letters and digits)",
    );
  }
  const webhookSecret = env[settings.webhook_secret_env]?.trim() ?? "";
  if (!webhookSecret) {
    throw invalid(
      settings.webhook_secret_env,
      "is not set: webhook mode needs a secret that Telegram sends with every delivery",
    );
  }
  if (webhookSecret.length < SECRET_MIN || webhookSecret.length > SECRET_MAX) {
    throw invalid(
      settings.webhook_secret_env,
      `must be ${SECRET_MIN} to ${SECRET_MAX} characters long, not ${webhookSecret.length}`,
    );
  }
  if (!SECRET_CHARS.test(webhookSecret)) {
    throw invalid(
      settings.webhook_secret_env,
      "may hold only letters, digits, _ and - (Telegram refuses any other character in a webhook secret)",
    );
  }
  return { token, webhookSecret };
}
