/**
 * `spar channel setup|list|status|remove|tunnel`: messaging channels (Telegram, Slack, Discord) and
 * the tunnel their webhooks come through. `setup` (channel-setup.ts) and `remove` edit the data dir's
 * config.toml and .env, which the daemon reads at start, so both end by saying to restart it.
 * `list`, `status` and `tunnel` ask the running daemon (`/api/v1/channels`, `/api/v1/tunnel`);
 * `list` and `tunnel` fall back to what config.toml says when it is not running.
 *
 * A channel is not activated in a running daemon: its webhook route would have to join a listener
 * that is already serving, and its secrets come from `.env`, read once at start. So `list` and
 * `status` compare the daemon's channels with config.toml and say which are configured but wait
 * for a restart (and which were removed but still run until one).
 */

import { resolveHome } from "../../lib/home.js";
import { isSparError, SparError } from "../../sdk/errors.js";
import type { ChannelStatus, TunnelInfo } from "../../sdk/plugin-contracts.js";
import { api } from "../client.js";
import { type GlobalOptions, printable, printJson, table } from "../output.js";
import { createAsker } from "./channel-ask.js";
import { checkTable, readConfig, readEnvFile, tableAt, updateEnvFile, writeTables } from "./channel-files.js";
import { deleteTelegramWebhook, PLATFORMS, type PlatformId } from "./channel-platforms.js";
import type { SetupOptions } from "./channel-setup.js";
import { type TunnelFlags, tunnelFromOptions, tunnelUrl } from "./channel-tunnel.js";

type ChannelOptions = SetupOptions & { mode?: string };
type Table = Record<string, unknown>;

/** The tunnel as the daemon answers it; `error` once cloudflared has stopped. */

/** `spar channel <action>`; the parser has checked that each action has its platform. */
export async function channel(action: string, args: string[], options: ChannelOptions): Promise<void> {
  const platform = args[0] ?? "";
  switch (action) {
    case "setup":
      return (await import("./channel-setup.js")).setup(platform, options);
    case "list":
      return list(options);
    case "status":
      return status(platformName(platform), options);
    case "remove":
      return remove(platformName(platform), options);
    case "tunnel":
      return tunnel(options);
    default:
      throw new SparError("VALIDATION_FAILED", `unknown action "${action}" for channel`);
  }
}

/** A platform id as config tables are named (`[channels.<id>]`): bundled or a plugin's. */
function platformName(name: string): string {
  if (!/^[a-z0-9_]+$/.test(name)) {
    throw new SparError(
      "VALIDATION_FAILED",
      `"${name}" is not a platform id (like telegram, slack, discord)`,
    );
  }
  return name;
}

const daemonDown = (err: unknown) => isSparError(err) && err.code === "DAEMON_UNREACHABLE";

/** What to do for a channel config.toml and the running daemon disagree about. */
const RESTART = "restart the daemon (spar stop, then spar start --detach)";

/** The platforms configured in config.toml but not active in the daemon, and the reverse. */
function drift(active: string[]): { inactive: string[]; removed: string[] } {
  const configured = configuredTables().map((c) => c.platform);
  return {
    inactive: configured.filter((p) => !active.includes(p)),
    removed: active.filter((p) => !configured.includes(p)),
  };
}

/** Lines saying what `drift` found, for the table's foot. */
function driftLines({ inactive, removed }: { inactive: string[]; removed: string[] }): string[] {
  return [
    ...inactive.map((p) => `${p}: configured; ${RESTART} to activate it`),
    ...removed.map((p) => `${p}: removed from config.toml but still running; ${RESTART} to stop it`),
  ];
}

async function list(options: GlobalOptions): Promise<void> {
  let listed: { channels: ChannelStatus[] };
  try {
    listed = await api<{ channels: ChannelStatus[] }>("GET", "/api/v1/channels");
  } catch (err) {
    if (!daemonDown(err)) throw err;
    return listConfigured(options, (err as Error).message);
  }
  const changed = drift(listed.channels.map((c) => c.platform));
  if (options.json) return printJson({ running: true, ...listed, ...changed });
  const pending = driftLines(changed);
  if (listed.channels.length === 0) {
    const lines = pending.length > 0 ? ["No channel is active yet.", ...pending] : [NO_CHANNELS];
    return void process.stdout.write(`${lines.join("\n")}\n`);
  }
  const rows = listed.channels.map((c) => [
    c.platform,
    c.mode,
    c.connected ? "yes" : "no",
    c.fighter,
    String(c.allowlist_size),
    `${c.inbound}/${c.outbound}`,
    String(c.refused.signature + c.refused.allowlist + c.refused.rate),
    c.last_inbound_at ?? "-",
  ]);
  const problems = listed.channels
    .filter((c) => c.error)
    .map((c) => `  ${c.platform}: ${printable(c.error ?? "")}`);
  process.stdout.write(
    `${table([["PLATFORM", "MODE", "CONNECTED", "FIGHTER", "ALLOWED", "IN/OUT", "REFUSED", "LAST INBOUND"], ...rows])}\n` +
      (problems.length > 0 ? `\nProblems:\n${problems.join("\n")}\n` : "") +
      (pending.length > 0 ? `\n${pending.join("\n")}\n` : ""),
  );
}

const NO_CHANNELS = "No channels are configured; spar channel setup <telegram|slack|discord> adds one";

/** The `[channels.<platform>]` tables of config.toml. */
function configuredTables(): { platform: string; fighter: string; allowlist_size: number }[] {
  return Object.entries((tableAt(readConfig(resolveHome()), "channels") ?? {}) as Table)
    .filter(([, value]) => typeof value === "object" && value !== null && !Array.isArray(value))
    .map(([platform, value]) => {
      const t = value as Table;
      return {
        platform,
        fighter: typeof t.fighter === "string" ? t.fighter : "spar",
        allowlist_size: Array.isArray(t.allowlist) ? t.allowlist.length : 0,
      };
    });
}

/** config.toml's channels, for when the daemon is not there to ask. */
async function listConfigured(options: GlobalOptions, why: string): Promise<void> {
  const channels = configuredTables();
  if (options.json) return printJson({ running: false, channels });
  const lines = [`${why}. Configured in config.toml:`];
  if (channels.length === 0) lines.push(NO_CHANNELS);
  else {
    const rows = channels.map((c) => [c.platform, c.fighter, String(c.allowlist_size)]);
    lines.push(table([["PLATFORM", "FIGHTER", "ALLOWED"], ...rows]));
  }
  process.stdout.write(`${lines.join("\n")}\n`);
}

async function status(platform: string, options: GlobalOptions): Promise<void> {
  let s: ChannelStatus;
  try {
    s = await api<ChannelStatus>("GET", `/api/v1/channels/${platform}`);
  } catch (err) {
    // Set up after the daemon started: say so, rather than "not configured".
    if (!isSparError(err, "NOT_FOUND") || !drift([]).inactive.includes(platform)) throw err;
    throw new SparError(
      "NOT_FOUND",
      `${platform} is configured in config.toml, but the running daemon started before it was: ${RESTART} to activate it`,
      { platform, configured: true, active: false },
    );
  }
  // The tunnel is asked about only for a channel that uses one (asking may open it).
  let tunnel: TunnelInfo | undefined;
  let tunnelError: string | undefined;
  if (s.webhook_url) {
    try {
      tunnel = await api<TunnelInfo>("GET", "/api/v1/tunnel");
    } catch (err) {
      tunnelError = err instanceof Error ? err.message : String(err);
    }
  }
  const matches = s.webhook_url && tunnel ? s.webhook_url.startsWith(`${tunnel.url}/`) : undefined;
  if (options.json) {
    return printJson({
      channel: s,
      tunnel: tunnel ?? (tunnelError ? { error: tunnelError } : null),
      webhook_matches_tunnel: matches ?? null,
    });
  }
  const refused = s.refused;
  const webhook = !s.webhook_url
    ? "-"
    : matches === undefined
      ? s.webhook_url
      : matches
        ? `${s.webhook_url} (the tunnel's current URL)`
        : `${s.webhook_url} (NOT the tunnel's current URL ${tunnel?.url}: restart the daemon to register it again)`;
  const lines = [
    `${s.platform}: ${s.connected ? "connected" : "NOT connected"} (${s.mode})`,
    `  webhook       ${printable(webhook)}`,
    ...(s.webhook_url
      ? [
          `  tunnel        ${tunnel ? `${tunnel.url} (${tunnel.mode})` : `- (${printable(tunnelError ?? "")})`}`,
        ]
      : []),
    ...(tunnel?.error ? [`  tunnel error  ${printable(tunnel.error)}`] : []),
    `  fighter       ${s.fighter}`,
    `  allowlist     ${s.allowlist_size} ${s.allowlist_size === 1 ? "sender" : "senders"}${s.allowlist_size === 0 ? " (nobody can talk to the bot)" : ""}`,
    `  last inbound  ${s.last_inbound_at ?? "-"}`,
    `  messages      ${s.inbound} in, ${s.outbound} out`,
    `  refused       ${refused.signature} bad signature, ${refused.allowlist} not on the allowlist, ${refused.rate} over the rate`,
    ...(s.error ? [`  error         ${printable(s.error)}`] : []),
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
}

/**
 * Deregisters the channel where the platform allows it (Telegram's deleteWebhook), then removes its
 * table from config.toml and its secrets from .env (those no other channel names).
 */
async function remove(platform: string, options: GlobalOptions): Promise<void> {
  const home = resolveHome();
  const config = readConfig(home);
  const saved = tableAt(config, `channels.${platform}`);
  if (!saved) {
    throw new SparError("NOT_FOUND", `no [channels.${platform}] in config.toml: there is nothing to remove`);
  }
  let effective: Table = saved;
  try {
    effective = checkTable(home, `channels.${platform}`, saved);
  } catch {
    // A table its plugin would refuse (or without a plugin) is removed all the same, as written.
  }
  const envFile = readEnvFile(home);
  const steps: string[] = [];
  const warnings: string[] = [];
  let deregistered = false;
  if (platform === "telegram") {
    const tokenEnv = String(effective.token_env ?? PLATFORMS.telegram.tokenEnv);
    const token = envFile[tokenEnv] ?? process.env[tokenEnv];
    const apiRoot = String(effective.api_root ?? PLATFORMS.telegram.defaultApiRoot);
    if (!token) {
      warnings.push(`no ${tokenEnv} in .env or the environment, so Telegram's webhook was not deleted`);
    } else {
      try {
        await deleteTelegramWebhook(apiRoot, token);
        deregistered = true;
        steps.push("Deleted the webhook at Telegram (deleteWebhook)");
      } catch (err) {
        warnings.push(`Telegram's webhook was not deleted: ${(err as Error).message}`);
      }
    }
  } else if (platform in PLATFORMS) {
    warnings.push(MANUAL_DEREGISTRATION[platform as Exclude<PlatformId, "telegram">]);
  }

  const variables = envVariables(effective);
  const stillUsed = new Set(
    Object.entries((tableAt(config, "channels") ?? {}) as Table)
      .filter(([other, value]) => other !== platform && typeof value === "object" && value !== null)
      .flatMap(([, value]) => envVariables(value as Table)),
  );
  const removed = variables.filter((v) => !stillUsed.has(v) && envFile[v] !== undefined);
  writeTables(home, { [`channels.${platform}`]: undefined });
  updateEnvFile(home, {}, removed);
  steps.push(
    `Removed [channels.${platform}] from config.toml${removed.length > 0 ? ` and ${removed.join(", ")} from .env` : ""}`,
  );
  if (options.json) {
    return printJson({
      platform,
      removed: true,
      webhook_deleted: deregistered,
      variables_removed: removed,
      warnings,
    });
  }
  for (const w of warnings) process.stderr.write(`spar: ${printable(w)}\n`);
  process.stdout.write(
    `${[...steps, "Restart the daemon to stop the channel (spar stop, then spar start --detach)"].join("\n")}\n`,
  );
}

const MANUAL_DEREGISTRATION: Record<Exclude<PlatformId, "telegram">, string> = {
  slack:
    "Slack still has the Request URL: turn Event Subscriptions off in your app (api.slack.com/apps), or delete the app",
  discord:
    "Discord still has the Interactions Endpoint URL: clear it in the Developer Portal (your application → General Information)",
};

/** The variables a channel table names (`token_env`, `webhook_secret_env`, …). */
function envVariables(t: Table): string[] {
  return Object.entries(t)
    .filter(([key, value]) => key.endsWith("_env") && typeof value === "string")
    .map(([, value]) => value as string);
}

/** `spar channel tunnel`: the tunnel's URL now, or with `--mode` (or its flags) a new `[tunnel]`. */
async function tunnel(options: ChannelOptions): Promise<void> {
  const flags: TunnelFlags = {
    tunnel: options.mode,
    url: options.url,
    name: options.name,
    hostname: options.hostname,
  };
  if (!flags.tunnel && !flags.url && !flags.name && !flags.hostname) return showTunnel(options);
  const home = resolveHome();
  const ask = await createAsker({ json: options.json, yes: true, title: "spar channel tunnel" });
  const saved: Table = { ...tableAt(readConfig(home), "tunnel") };
  const updated = await tunnelFromOptions(flags, saved, ask);
  writeTables(home, { tunnel: updated });
  const url = tunnelUrl(updated);
  if (options.json)
    return printJson({ tunnel: { mode: updated.mode, ...(url ? { url } : {}) }, saved: true });
  ask.step(`Saved [tunnel] mode = "${updated.mode}"${url ? `: ${url}` : " (a new URL at every start)"}`);
  ask.note("Next", [
    "Restart the daemon: it registers Telegram's webhook and Discord's endpoint at the new URL",
    "Slack's Request URL is pasted by hand: spar channel status slack shows the new one",
  ]);
  ask.end("Tunnel saved");
}

async function showTunnel(options: GlobalOptions): Promise<void> {
  let shown: TunnelInfo;
  try {
    shown = await api<TunnelInfo>("GET", "/api/v1/tunnel");
  } catch (err) {
    if (!daemonDown(err)) throw err;
    const saved = (tableAt(readConfig(resolveHome()), "tunnel") ?? {}) as Table;
    const mode = typeof saved.mode === "string" ? saved.mode : "quick";
    const known =
      mode === "manual" ? saved.url : mode === "named" ? `https://${String(saved.hostname)}` : undefined;
    if (options.json)
      return printJson({ running: false, tunnel: { mode, ...(known ? { url: known } : {}) } });
    const what = known ? `${mode}, ${String(known)}` : `${mode} (a new URL at every start)`;
    process.stdout.write(`${(err as Error).message}. config.toml: [tunnel] ${what}\n`);
    return;
  }
  if (options.json) return printJson({ running: true, tunnel: shown });
  process.stdout.write(`Tunnel: ${shown.url} (${shown.mode})\n`);
  if (!shown.error) return;
  process.stderr.write(`spar: ${printable(shown.error)}\n`);
  process.exitCode = 1;
}
