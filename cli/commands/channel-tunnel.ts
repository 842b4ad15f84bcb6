/**
 * The `[tunnel]` table as `spar channel setup` and `spar channel tunnel` build it from flags, the
 * saved table and (on a terminal) prompts: `quick` (cloudflared, a new URL each start), `named`
 * (cloudflared with a tunnel made beforehand; the URL is `https://<hostname>`) or `manual` (a URL
 * of your own that forwards to the webhook listener). Keys the flags do not set are kept.
 */
import { SparError } from "../../sdk/errors.js";
import type { Asker } from "./channel-ask.js";

export type TunnelMode = "quick" | "named" | "manual";

export interface TunnelFlags {
  tunnel?: string;
  url?: string;
  name?: string;
  hostname?: string;
}

/** `[tunnel]` as config.toml takes it: the plugin (tunnel-cloudflared) checks the rest. */
export type TunnelTable = Record<string, unknown> & { mode: TunnelMode };

const MODES: TunnelMode[] = ["quick", "named", "manual"];

/** The keys that belong to one mode only, and which mode uses which (`cloudflared` is every mode's). */
const MODE_KEYS = ["url", "name", "hostname"];
const MODE_USES: Record<TunnelMode, readonly string[]> = {
  quick: [],
  named: ["name", "hostname"],
  manual: ["url"],
};

/**
 * The tunnel the flags ask for: `mode` from `--tunnel` (implied by `--url`, manual, or `--name` /
 * `--hostname`, named), else the saved one, else asked, else quick; then what that mode needs.
 */
export async function tunnelFromOptions(
  flags: TunnelFlags,
  saved: Record<string, unknown>,
  ask: Asker,
): Promise<TunnelTable> {
  const implied = flags.url ? "manual" : flags.name || flags.hostname ? "named" : undefined;
  const given =
    flags.tunnel ??
    implied ??
    (MODES.includes(saved.mode as TunnelMode) ? (saved.mode as TunnelMode) : undefined);
  if (given !== undefined && !MODES.includes(given as TunnelMode)) {
    throw new SparError("VALIDATION_FAILED", `unknown tunnel mode "${given}"; modes: ${MODES.join(", ")}`);
  }
  const mode = await ask.choose(
    given as TunnelMode | undefined,
    "How do the platforms reach this machine?",
    [
      { value: "quick", label: "quick", hint: "cloudflared, no account; a new URL at every start" },
      { value: "named", label: "named", hint: "cloudflared with your tunnel and hostname; a URL that stays" },
      { value: "manual", label: "manual", hint: "your own reverse proxy's https URL" },
    ],
    "quick",
  );
  // What only another mode uses goes: a manual URL left behind by a switch to quick would still be
  // shown by `spar channel tunnel` and read as where the platforms deliver.
  const table: TunnelTable = { ...saved, mode };
  for (const key of MODE_KEYS) if (!MODE_USES[mode].includes(key)) delete table[key];
  const keep = (key: string) =>
    saved.mode === mode && typeof saved[key] === "string" ? (saved[key] as string) : undefined;
  if (mode === "manual") {
    const url = await ask.value(flags.url ?? keep("url"), "--url <public URL> (with --tunnel manual)", {
      message: "The public URL that forwards to the webhook listener",
      placeholder: "https://bots.example.com",
      validate: urlProblem,
    });
    const problem = urlProblem(url);
    if (problem) throw new SparError("VALIDATION_FAILED", `--url: ${problem}`);
    table.url = url.replace(/\/+$/, "");
  }
  if (mode === "named") {
    table.name = await ask.value(
      flags.name ?? keep("name"),
      "--name <tunnel> (made with cloudflared tunnel create)",
      {
        message: "The tunnel's name (cloudflared tunnel create <name>)",
        placeholder: "spar",
      },
    );
    const hostname = await ask.value(
      flags.hostname ?? keep("hostname"),
      "--hostname <host> (routed to the tunnel)",
      {
        message: "Its public host name (cloudflared tunnel route dns <name> <host>)",
        placeholder: "bots.example.com",
      },
    );
    table.hostname = hostname.replace(/^https?:\/\//, "").replace(/\/+$/, "");
  }
  return table;
}

/** The public URL a tunnel table gives, when it is known before the daemon runs (not for quick). */
export function tunnelUrl(table: TunnelTable): string | undefined {
  if (table.mode === "manual") return String(table.url);
  if (table.mode === "named") return `https://${String(table.hostname)}`;
  return undefined;
}

function urlProblem(url: string): string | undefined {
  return /^https?:\/\/[^\s/?#]+(\/[^\s?#]*)?$/.test(url)
    ? undefined
    : "an http:// or https:// URL without a query, like https://bots.example.com";
}
