/**
 * Reading cloudflared's output: its log lines (`<time> INF <message>` on stderr), the quick tunnel's
 * URL in the box it prints, and the line that says the tunnel is connected. Every line goes to the
 * daemon's log, so anything that looks like a credential (a tunnel token, which cloudflared may echo
 * in its `Settings: map[…]` line when it came from TUNNEL_TOKEN) is masked first.
 */

/** `2025-01-01T00:00:00Z INF ` and the like, before each message. */
const PREFIX = /^\d{4}-\d{2}-\d{2}T\S+\s+(?:DBG|INF|WRN|ERR|FTL)\s+/;

/**
 * A quick tunnel's host: words joined by hyphens under trycloudflare.com. The hyphen is required, so
 * `api.trycloudflare.com`, which appears in cloudflared's errors, is never taken for the tunnel.
 */
const QUICK_URL = /https:\/\/([a-z0-9]+(?:-[a-z0-9]+)+)\.trycloudflare\.com\b/;

/** cloudflared's line once a connection to Cloudflare's edge is up: the URL then reaches the listener. */
const REGISTERED = /\bRegistered tunnel connection\b/;

/** A run of 40 or more base64 characters: a tunnel token or a key, never anything worth reading. */
const CREDENTIAL = /[A-Za-z0-9+/_]{40,}={0,2}/g;
/** `token:…`, `secret=…`, `credentials-file …` values in cloudflared's settings line. */
const NAMED_SECRET = /\b(token|secret|password|credentials?)([:=]\s*)[^\s\]]+/gi;

/** One output line as it goes to the daemon's log: without cloudflared's time and level, secrets masked. */
export function logLine(raw: string): string {
  return raw
    .replace(PREFIX, "")
    .replace(NAMED_SECRET, "$1$2[redacted]")
    .replace(CREDENTIAL, "[redacted]")
    .trimEnd();
}

/** The quick tunnel's public URL, when this line carries it. */
export function quickTunnelUrl(line: string): string | undefined {
  return QUICK_URL.exec(line)?.[0];
}

/** Whether this line says a connection to Cloudflare's edge is registered. */
export function isRegistered(line: string): boolean {
  return REGISTERED.test(line);
}
