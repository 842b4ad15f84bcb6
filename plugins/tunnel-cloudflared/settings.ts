/**
 * The cloudflared command line for a `[tunnel]` table, and the URL it will give when that is known
 * in advance (a named tunnel's hostname). Kept apart from the process so it can be read and tested
 * on its own.
 */
import { isAbsolute, resolve } from "node:path";
import { SparError, type TunnelInfo } from "../../sdk/index.js";

/** The `[tunnel]` table, checked against plugin.json's schema with its defaults. */
export interface TunnelSettings {
  mode: TunnelInfo["mode"];
  url?: string;
  name?: string;
  hostname?: string;
  cloudflared: string;
}

export interface TunnelCommand {
  executable: string;
  args: string[];
  /** `https://<hostname>` for a named tunnel; a quick tunnel's URL is known only from its output. */
  url?: string;
}

/**
 * What to run for `settings` (mode `quick` or `named`) pointing at `target`, the webhook listener.
 * A `cloudflared` with a slash that is not absolute is taken relative to the data dir.
 */
export function tunnelTarget(settings: TunnelSettings, target: string, home: string): TunnelCommand {
  const executable =
    settings.cloudflared.includes("/") && !isAbsolute(settings.cloudflared)
      ? resolve(home, settings.cloudflared)
      : settings.cloudflared;
  if (settings.mode === "quick") {
    return { executable, args: ["tunnel", "--no-autoupdate", "--url", target] };
  }
  if (!settings.name || !settings.hostname) {
    throw new SparError(
      "CONFIG_INVALID",
      '[tunnel] mode = "named" needs name (the tunnel made with cloudflared tunnel create) and hostname (its public host name)',
    );
  }
  return {
    executable,
    args: ["tunnel", "--no-autoupdate", "run", "--url", target, settings.name],
    url: `https://${settings.hostname}`,
  };
}
