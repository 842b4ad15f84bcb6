/** Loopback addresses and names: what "from this machine" means for the API and the audit. */
import { isIPv4, isIPv6 } from "node:net";

/** A peer address on loopback: 127.0.0.0/8 or ::1, also IPv4-mapped. Only well-formed literals count. */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (!address) return false;
  const a = address.toLowerCase();
  const v4 = a.startsWith("::ffff:") ? a.slice("::ffff:".length) : a;
  if (isIPv4(v4)) return v4.startsWith("127.");
  // The URL parser writes an IPv6 literal in its shortest form, so every spelling of ::1 meets here.
  return isIPv6(a) && URL.parse(`http://[${a}]/`)?.hostname === "[::1]";
}

/**
 * A host on loopback (a listen address, a URL's hostname): `localhost`, 127.0.0.0/8 or ::1, bare,
 * bracketed, or with a port in the strict Host form.
 */
export function isLoopbackHost(host: string | undefined): boolean {
  if (!host) return false;
  const h = host.toLowerCase();
  if (h === "localhost" || isLoopbackAddress(h.startsWith("[") && h.endsWith("]") ? h.slice(1, -1) : h))
    return true;
  const parsed = parseHostHeader(h);
  return parsed?.port !== undefined && isLoopbackHost(parsed.host);
}

/**
 * A Host header parsed strictly: a name or IPv4 literal, or an IPv6 literal in brackets, then an
 * optional numeric port, and nothing else (no user info, path, spaces or second colon). Undefined
 * for anything else, so `[::1].evil.example`, `127.0.0.1:evil` and `localhost:x@evil` never pass.
 */
export function parseHostHeader(value: string | undefined): { host: string; port?: number } | undefined {
  if (value === undefined) return undefined;
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9._-]+))(?::([0-9]{1,5}))?$/.exec(value);
  if (!match) return undefined;
  const [, v6, name, port] = match;
  if (v6 !== undefined && !isIPv6(v6)) return undefined;
  const number = port === undefined ? undefined : Number(port);
  if (number !== undefined && (number < 1 || number > 65535)) return undefined;
  return { host: v6 ?? (name as string), ...(number !== undefined ? { port: number } : {}) };
}

/** A Host header naming this machine: `localhost` or a loopback literal, with an optional port. */
export function isLoopbackHostHeader(value: string | undefined): boolean {
  const parsed = parseHostHeader(value);
  return parsed !== undefined && isLoopbackHost(parsed.host);
}
