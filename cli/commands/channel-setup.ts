/**
 * `spar channel setup <telegram|slack|discord>`: the bot token checked with the platform, the
 * allowlist (ids only, each checked; an empty one is refused, since nobody could talk to the bot),
 * the owners (`--owner`, ids on the allowlist whose messages are the operator's own; none by default),
 * the platform's other secret (Telegram's webhook secret, generated; Slack's signing secret; Discord's
 * public key, from its application), the tunnel, then the secrets saved in `<data dir>/.env` (0600)
 * and `[channels.<platform>]` and `[tunnel]` in config.toml, nothing else touched. Telegram's webhook
 * is registered at once when the tunnel's URL is known in advance (manual, named); a quick tunnel's
 * URL is new at every start, so the daemon registers it then. Every value comes from a flag, else
 * from what an earlier setup saved, else (on a terminal) a prompt: re-running setup with no flags
 * registers again and keeps the rest. No secret is ever printed.
 */
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { resolveHome } from "../../lib/home.js";
import { SparError } from "../../sdk/errors.js";
import { type GlobalOptions, printJson } from "../output.js";
import { type Asker, createAsker } from "./channel-ask.js";
import { checkTable, readConfig, readEnvFile, tableAt, updateEnvFile, writeTables } from "./channel-files.js";
import {
  type BotIdentity,
  discordApplication,
  type Platform,
  parseAllowlist,
  parseOwners,
  platformOf,
  setTelegramWebhook,
} from "./channel-platforms.js";
import { type TunnelMode, type TunnelTable, tunnelFromOptions, tunnelUrl } from "./channel-tunnel.js";
import { initHome } from "./init-home.js";

export interface SetupOptions extends GlobalOptions {
  token?: string;
  allow?: string;
  owner?: string;
  fighter?: string;
  tunnel?: string;
  url?: string;
  name?: string;
  hostname?: string;
  apiRoot?: string;
  signingSecret?: string;
  publicKey?: string;
  applicationId?: string;
  yes?: boolean;
}

type Table = Record<string, unknown>;

/** Everything setup will save and do, gathered and checked before anything is written. */
interface Plan {
  platform: Platform;
  home: string;
  apiRoot: string;
  token: string;
  bot: BotIdentity;
  allowlist: (number | string)[];
  /** Whose messages are the operator's own; anyone else's taints the turn it starts. */
  owners: (number | string)[];
  fighter: string;
  /** `[channels.<platform>]` as it will be written, and as checked (with its defaults). */
  table: Table;
  checked: Table;
  tunnel: TunnelTable;
  /** The secrets, by variable name, for .env. */
  secrets: Map<string, string>;
  /** The tunnel's URL when it is known before the daemon runs (manual, named). */
  publicUrl?: string;
  webhookUrl?: string;
}

export async function setup(name: string, options: SetupOptions): Promise<void> {
  const platform = platformOf(name);
  const home = resolveHome();
  // Only what is missing (never overwriting): a first setup may come before the first start.
  initHome(home, { ...process.env });
  const ask = await createAsker({
    json: options.json,
    yes: options.yes,
    title: `spar channel setup ${platform.id}`,
  });
  const plan = await gather(platform, home, options, ask);

  ask.note(`${platform.title} bot ${plan.bot.name}`, [
    `answered by   ${plan.fighter}`,
    `allowlist     ${plan.allowlist.join(", ")}`,
    `owners        ${plan.owners.length > 0 ? plan.owners.join(", ") : "none: every message is untrusted content (--owner <id> names yours)"}`,
    `tunnel        ${plan.tunnel.mode}${plan.publicUrl ? `, ${plan.publicUrl}` : " (a new URL at every start)"}`,
    `webhook       ${plan.webhookUrl ?? "registered by the daemon at each start"}`,
    `secrets       ${[...plan.secrets.keys()].join(", ")} in ${join(home, ".env")}`,
  ]);
  if (!(await ask.confirm("Save this?"))) {
    throw new SparError("CANCELLED", "setup cancelled; nothing was changed");
  }
  const warnings = save(plan, ask);
  const registered = await register(plan, ask);

  const next = nextSteps(
    platform,
    plan.tunnel.mode,
    plan.webhookUrl ?? `<tunnel URL>${String(plan.checked.path)}`,
  );
  if (!options.json) {
    ask.note("Next", next);
    return ask.end(`${platform.title} is set up`);
  }
  printJson({
    platform: platform.id,
    bot: plan.bot,
    allowlist: plan.allowlist,
    owners: plan.owners,
    fighter: plan.fighter,
    tunnel: { mode: plan.tunnel.mode, ...(plan.publicUrl ? { url: plan.publicUrl } : {}) },
    ...(plan.webhookUrl ? { webhook_url: plan.webhookUrl } : {}),
    webhook_registered: registered,
    config_file: join(home, "config.toml"),
    env_file: join(home, ".env"),
    variables: [...plan.secrets.keys()],
    warnings,
    next,
  });
}

/**
 * Every value from its flag, else from the last setup (config.toml, .env), else asked: the token,
 * the allowlist, the fighter, the platform's other secrets, the tunnel. Everything that can be
 * checked here is checked before the platform is called: a bad `--allow` or a missing Slack signing
 * secret is refused without a request that would show the token to the platform for nothing. Only
 * then is the token checked with the platform (and, for Discord, its application read).
 */
async function gather(platform: Platform, home: string, options: SetupOptions, ask: Asker): Promise<Plan> {
  const config = readConfig(home);
  const saved: Table = { ...tableAt(config, `channels.${platform.id}`) };
  const envFile = readEnvFile(home);
  const envName = (key: string, fallback: string) => (typeof saved[key] === "string" ? saved[key] : fallback);
  const savedValue = (key: string, fallback: string) => {
    const variable = envName(key, fallback);
    return envFile[variable] ?? process.env[variable];
  };

  const apiRoot = apiRootOf(
    options.apiRoot ?? (saved.api_root as string | undefined) ?? platform.defaultApiRoot,
  );
  const savedToken = savedValue("token_env", platform.tokenEnv);
  if (options.token === undefined && savedToken !== undefined) {
    ask.step(`Using the saved token (${envName("token_env", platform.tokenEnv)}); --token gives another`);
  }
  const token = await ask.value(
    options.token === "-" ? await readStdin() : (options.token ?? savedToken),
    "--token <bot token> (or --token - to read it from stdin)",
    {
      message: `The bot token: ${platform.tokenHelp}`,
      secret: true,
      validate: (v) => problem(() => platform.checkToken(v)),
    },
  );
  platform.checkToken(token);

  const savedAllow =
    Array.isArray(saved.allowlist) && saved.allowlist.length > 0 ? saved.allowlist.join(",") : undefined;
  const allowText = await ask.value(
    options.allow ?? savedAllow,
    "--allow <id,id,…> (who may talk to the bot)",
    {
      message: `Who may talk to the bot? (${platform.idHint}; separate them with commas)`,
      validate: (v) => problem(() => parseAllowlist(platform, v)),
    },
  );
  const allowlist = parseAllowlist(platform, allowText);
  const owners = parseOwners(platform, options.owner, saved.owners, allowlist);
  const fighter = options.fighter ?? (saved.fighter as string | undefined) ?? "spar";

  const secrets = new Map<string, string>([[envName("token_env", platform.tokenEnv), token]]);
  // Keys the wizard does not ask about (path, rate_per_minute, notify_chat) are kept.
  const table: Table = { ...saved, token_env: envName("token_env", platform.tokenEnv) };
  const context: SecretContext = { options, ask, apiRoot, token, savedValue, envName };
  const extra = await platformSecrets(platform, context);
  for (const [key, variable, value] of extra.secrets) {
    table[key] = variable;
    secrets.set(variable, value);
  }
  Object.assign(table, extra.table, { allowlist, fighter });
  if (owners.length > 0) table.owners = owners;
  else delete table.owners;
  if (options.apiRoot || saved.api_root !== undefined) table.api_root = apiRoot;

  const tunnel = await tunnelFromOptions(options, { ...tableAt(config, "tunnel") }, ask);
  checkTable(home, `channels.${platform.id}`, table);
  checkTable(home, "tunnel", tunnel);

  // Every flag is good: now the platform.
  const bot = await platform.whoAmI(apiRoot, token);
  ask.step(`${platform.title} accepted the token: bot ${bot.name} (id ${bot.id})`);
  if (platform.id === "discord") Object.assign(table, await discordKeys(context, secrets));
  const checked = checkTable(home, `channels.${platform.id}`, table);
  const publicUrl = tunnelUrl(tunnel);
  const webhookUrl = publicUrl === undefined ? undefined : `${publicUrl}${String(checked.path)}`;
  return {
    platform,
    home,
    apiRoot,
    token,
    bot,
    allowlist,
    owners,
    fighter,
    table,
    checked,
    tunnel,
    secrets,
    publicUrl,
    webhookUrl,
  };
}

/** Writes config.toml (checked as the daemon checks it) and .env; returns the warnings it gave. */
function save(plan: Plan, ask: Asker): string[] {
  const { platform, home, secrets } = plan;
  writeTables(home, { [`channels.${platform.id}`]: plan.table, tunnel: plan.tunnel });
  updateEnvFile(home, Object.fromEntries(secrets));
  ask.step(
    `Saved [channels.${platform.id}] and [tunnel] in ${join(home, "config.toml")}, the secrets in ${join(home, ".env")} (0600)`,
  );
  const warnings: string[] = [];
  for (const variable of secrets.keys()) {
    if (process.env[variable] !== undefined && process.env[variable] !== secrets.get(variable)) {
      warnings.push(
        `${variable} is also set in your environment, where it wins over .env: unset it before starting the daemon`,
      );
    }
  }
  if (plan.publicUrl?.startsWith("http://")) {
    warnings.push(
      `${plan.publicUrl} is plain http: ${platform.title} delivers only to https:// URLs (a self-hosted server aside)`,
    );
  }
  for (const warning of warnings) ask.warn(warning);
  return warnings;
}

/**
 * Telegram's webhook, set now when the tunnel's URL is known (the daemon sets it again at each
 * start). Slack's Request URL is pasted by hand and Discord's endpoint is set by the daemon, which
 * Discord calls to check it. Returns whether a webhook was registered.
 */
async function register(plan: Plan, ask: Asker): Promise<boolean> {
  if (plan.platform.id !== "telegram" || !plan.webhookUrl) return false;
  const secret = plan.secrets.get(String(plan.table.webhook_secret_env)) ?? "";
  try {
    await setTelegramWebhook(plan.apiRoot, plan.token, plan.webhookUrl, secret);
  } catch (err) {
    const e = err as SparError;
    throw new SparError(
      e.code ?? "PROVIDER_ERROR",
      `saved, but the webhook was not registered: ${e.message}; the daemon tries again at each start`,
    );
  }
  ask.step(`Telegram will deliver to ${plan.webhookUrl} (setWebhook, with the secret)`);
  return true;
}

interface SecretContext {
  options: SetupOptions;
  ask: Asker;
  apiRoot: string;
  token: string;
  savedValue(key: string, fallback: string): string | undefined;
  envName(key: string, fallback: string): string;
}

/**
 * The platform's secrets besides the token, as [table key, variable, value], and its other keys,
 * all known without calling the platform: Telegram's webhook secret (kept from the last setup, else
 * 32 random characters), Slack's signing secret (given), Discord's `--public-key` and
 * `--application-id` when given (their form only: `discordKeys` checks them with the platform).
 */
async function platformSecrets(
  platform: Platform,
  context: SecretContext,
): Promise<{ secrets: [string, string, string][]; table: Table }> {
  const { options, ask, savedValue, envName } = context;
  if (platform.id === "telegram") {
    const kept = savedValue("webhook_secret_env", "TELEGRAM_WEBHOOK_SECRET");
    const secret =
      kept && /^[A-Za-z0-9_-]{16,256}$/.test(kept) ? kept : randomBytes(24).toString("base64url");
    const variable = envName("webhook_secret_env", "TELEGRAM_WEBHOOK_SECRET");
    return { secrets: [["webhook_secret_env", variable, secret]], table: {} };
  }
  if (platform.id === "slack") {
    const secret = await ask.value(
      options.signingSecret ?? savedValue("signing_secret_env", "SLACK_SIGNING_SECRET"),
      "--signing-secret <secret> (your Slack app: Basic Information → App Credentials → Signing Secret)",
      {
        message: "The app's Signing Secret (Basic Information → App Credentials)",
        secret: true,
        validate: signingSecretProblem,
      },
    );
    const refused = signingSecretProblem(secret);
    if (refused) throw new SparError("VALIDATION_FAILED", `--signing-secret: ${refused}`);
    const variable = envName("signing_secret_env", "SLACK_SIGNING_SECRET");
    return { secrets: [["signing_secret_env", variable, secret]], table: {} };
  }
  if (options.publicKey !== undefined && !/^[0-9a-f]{64}$/i.test(options.publicKey)) {
    throw new SparError(
      "VALIDATION_FAILED",
      "--public-key must be the application's Public Key: 64 hex characters",
    );
  }
  if (options.applicationId !== undefined && !/^\d{17,20}$/.test(options.applicationId)) {
    throw new SparError(
      "VALIDATION_FAILED",
      "--application-id must be the application's id: 17 to 20 digits (General Information → Application ID)",
    );
  }
  return { secrets: [], table: {} };
}

/**
 * Discord's application, read with the (accepted) token: its public key, which verifies
 * interactions, and its id. A `--public-key` or `--application-id` that is not this application's
 * is refused. Adds the key to `secrets`; returns the table's keys.
 */
async function discordKeys(context: SecretContext, secrets: Map<string, string>): Promise<Table> {
  const { options, ask, envName } = context;
  const app = await discordApplication(context.apiRoot, context.token);
  const publicKey = (options.publicKey ?? app.verifyKey).toLowerCase();
  if (publicKey !== app.verifyKey.toLowerCase()) {
    throw new SparError(
      "VALIDATION_FAILED",
      `--public-key is not the public key of the application this bot belongs to (${app.id}): copy it from General Information, or leave the flag out`,
    );
  }
  if (options.applicationId && options.applicationId !== app.id) {
    throw new SparError(
      "VALIDATION_FAILED",
      `--application-id ${options.applicationId}: this bot belongs to application ${app.id}`,
    );
  }
  ask.step(`Discord application ${app.id}: its public key will verify interactions`);
  const variable = envName("public_key_env", "DISCORD_PUBLIC_KEY");
  secrets.set(variable, publicKey);
  return { public_key_env: variable, application_id: app.id };
}

/** Why a Slack signing secret cannot be one (empty, or with spaces from a bad copy); undefined when fine. */
function signingSecretProblem(secret: string): string | undefined {
  if (secret.trim() === "") return "the Signing Secret is empty (Basic Information → App Credentials)";
  if (/\s/.test(secret))
    return "the Signing Secret has spaces in it: copy it again (Basic Information → App Credentials)";
  return undefined;
}

/** What to do once setup is done, for each platform. */
function nextSteps(platform: Platform, mode: TunnelMode, webhookUrl: string): string[] {
  const restart =
    "Restart the daemon so it picks the channel up (spar stop, then spar start --detach; or Ctrl-C and spar start)";
  const status = `Then check it: spar channel status ${platform.id}`;
  if (platform.id === "slack") {
    const paste = [
      "In your Slack app (api.slack.com/apps): Event Subscriptions on, Request URL",
      `  ${webhookUrl}${mode === "quick" ? " (spar channel status slack shows it once the daemon runs)" : ""}`,
      "  (Slack calls it at once, so the daemon must be running), bot events message.im and message.channels",
    ];
    const quick =
      mode === "quick"
        ? [
            "A quick tunnel's URL changes at every start and Slack's must be pasted by hand: prefer",
            "  spar channel tunnel --mode named (or manual)",
          ]
        : [];
    return [restart, ...paste, ...quick, status];
  }
  if (platform.id === "discord") {
    return [
      restart,
      `At each start the daemon sets the application's Interactions Endpoint URL to ${webhookUrl}`,
      "For plain messages, turn on the Message Content Intent (Developer Portal → Bot)",
      status,
    ];
  }
  const registered =
    mode === "quick"
      ? ["The daemon registers the webhook at each start (a quick tunnel's URL changes every run)"]
      : [];
  return [restart, ...registered, status];
}

/** An API root as the platform plugins take it: http(s), no trailing slash. */
function apiRootOf(value: string): string {
  const root = value.replace(/\/+$/, "");
  if (!/^https?:\/\/[^\s/]+(\/\S*)?$/.test(root)) {
    throw new SparError("VALIDATION_FAILED", `--api-root must be an http:// or https:// URL, not "${value}"`);
  }
  return root;
}

/** The message of what `check` throws, or undefined when it passes (for a prompt's validation). */
function problem(check: () => unknown): string | undefined {
  try {
    check();
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8").trim();
  if (!text) throw new SparError("VALIDATION_FAILED", "--token - read nothing from stdin");
  return text;
}
