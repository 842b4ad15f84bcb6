/**
 * What a `network` grant's `hosts` means, in one place for web_fetch (plugins/moves-web) and the
 * sandbox's egress proxy (lib/sandbox), so the two never read the same grant two ways:
 *
 * - `*` is any host, on any port (`*:8443`: any host, on that port only);
 * - `example.com` is that name exactly; `*.example.com` is every name under it, at any depth, but
 *   not `example.com` itself (as a TLS wildcard reads), so a grant that wants both lists both;
 * - an IP address is that address (`[::1]` style brackets for IPv6 with a port);
 * - `:port` narrows an entry to that port; an entry without one allows every port;
 * - `hosts` is a list, or a string holding one or more entries separated by commas or spaces;
 * - a grant without `hosts` (and `full_access`) allows any host; `hosts: []` allows none.
 *
 * Where the host may be is a separate question: private, loopback and metadata addresses stay
 * refused whatever the grant says (lib/web/policy.ts's address rules).
 */
import type { Capability } from "../../sdk/types.js";
import { type HostPattern, hostMatches, parseHostPattern, splitPort } from "./policy.js";

/** One entry of a grant's `hosts`: a host pattern, or any host (optionally on one port). */
export type GrantHost = HostPattern | { any: true; port?: number };

/** The hosts some grants allow: the patterns, and the entries as written (for refusals). */
export interface HostAllowlist {
  readonly patterns: readonly GrantHost[];
  readonly listed: readonly string[];
}

/** The entries of a grant's `hosts`: a list as it is, a string split at commas and spaces. */
export function hostEntries(hosts: string | readonly string[]): string[] {
  const items = typeof hosts === "string" ? hosts.split(/[\s,]+/) : hosts.map((h) => h.trim());
  return items.filter((h) => h !== "");
}

/**
 * One entry parsed, or undefined when it is no host pattern.
 *
 * @example
 * parseGrantHost("*"); // { any: true }
 * parseGrantHost("*.example.com:8443"); // { suffix: ".example.com", port: 8443 }
 */
export function parseGrantHost(entry: string): GrantHost | undefined {
  const split = splitPort(entry.trim());
  if (split?.host === "*") return split.port === undefined ? { any: true } : { any: true, port: split.port };
  // The URL parser takes `*` as a name character; in a grant it is only ever meant as a wildcard.
  if (split?.host.replace(/^\*\./, "").includes("*")) return undefined;
  return parseHostPattern(entry);
}

/** The entries of `hosts` that are no host pattern (a manifest carrying one is refused). */
export function invalidHostEntries(hosts: string | readonly string[]): string[] {
  return hostEntries(hosts).filter((entry) => parseGrantHost(entry) === undefined);
}

/**
 * The hosts that `grants` (each one that allows network: `network` or `full_access`) allow
 * together, or undefined for any host. Entries that are no host pattern match nothing.
 */
export function grantHosts(grants: readonly Capability[]): HostAllowlist | undefined {
  if (grants.some((g) => g.type === "full_access" || g.hosts === undefined)) return undefined;
  const listed = grants.flatMap((g) => (g.hosts === undefined ? [] : hostEntries(g.hosts)));
  const patterns = listed.map((h) => parseGrantHost(h)).filter((p): p is GrantHost => p !== undefined);
  if (patterns.some((p) => "any" in p && p.port === undefined)) return undefined;
  return { patterns, listed };
}

/** Whether the host `key` (see hostKey) on `port` is one the allowlist holds. */
export function hostAllowed(allowlist: HostAllowlist, key: string, port: number): boolean {
  return allowlist.patterns.some((p) =>
    "any" in p ? p.port === undefined || p.port === port : hostMatches(key, p, port),
  );
}
