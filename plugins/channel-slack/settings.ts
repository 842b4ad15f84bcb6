/**
 * The `[channels.slack]` table as the manifest's schema leaves it (defaults filled in), and the two
 * secrets it names, read from the environment (the daemon has loaded `<data dir>/.env` into it).
 * Without the signing secret no delivery could be verified, so the daemon refuses to start rather
 * than serve a webhook anyone who learns the URL could call.
 */
import { SparError } from "../../sdk/index.js";

export interface SlackSettings {
  token_env: string;
  signing_secret_env: string;
  /** Member ids (`U…`, `W…` on Enterprise Grid); the schema refuses anything else. */
  allowlist: string[];
  /** Whose messages are the operator's own (the allowlist's form); anyone else's taint the turn. */
  owners: string[];
  fighter: string;
  /** Slack's host (the Web API is `<api_root>/api/<method>`): a fake in tests. */
  api_root: string;
  path: string;
  rate_per_minute: number;
  notify_chat?: string;
}

export interface SlackSecrets {
  /** The Bot User OAuth Token, `xoxb-…`. */
  token: string;
  /** Keys the v0 HMAC every Events API delivery carries. */
  signingSecret: string;
}

const SETUP = "run `spar channel setup slack`";

function invalid(variable: string, problem: string): SparError {
  return new SparError("CONFIG_INVALID", `[channels.slack] ${variable} ${problem}; ${SETUP}`, {
    path: "channels.slack",
    variable,
  });
}

/**
 * The bot token and the signing secret, checked. Throws CONFIG_INVALID naming the variable (never
 * its value) when one is missing or is plainly the wrong kind of credential.
 */
export function readSecrets(settings: SlackSettings, env: NodeJS.ProcessEnv): SlackSecrets {
  const token = env[settings.token_env]?.trim() ?? "";
  if (!token)
    throw invalid(settings.token_env, "is not set (it holds the app's Bot User OAuth Token, xoxb-…)");
  // A user token (xoxp-) or an app-level token (xapp-) would post as someone else or not at all.
  if (!/^xoxb-[A-Za-z0-9-]+$/.test(token)) {
    throw invalid(
      settings.token_env,
      "does not hold a bot token: it starts with xoxb- (OAuth & Permissions → Bot User OAuth Token)",
    );
  }
  const signingSecret = env[settings.signing_secret_env]?.trim() ?? "";
  if (!signingSecret) {
    throw invalid(
      settings.signing_secret_env,
      "is not set: every Events API delivery is checked against the app's Signing Secret (Basic Information → App Credentials)",
    );
  }
  return { token, signingSecret };
}
