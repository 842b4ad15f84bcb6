/**
 * Where a guarded fetch may go: host patterns (`example.com`, `*.example.com`, with an optional
 * port), an operator's `allow_private` list (the exceptions to the private-address rule), and the
 * cloud metadata endpoints, which nothing unlocks. The caller runs these on every hop, after DNS
 * resolution (fetch.ts). Which setting the list came from and who is fetching are named in every
 * refusal, so web_fetch says `[moves.web] allow_private` and the skill installer its own setting.
 */
import { SparError } from "../../sdk/errors.js";
import {
  type Cidr,
  classifyIp,
  formatIp,
  hostLiteral,
  type Ip,
  inCidr,
  KIND_WORDS,
  parseCidr,
  unmapped,
} from "./address.js";

/**
 * `example.com` exactly, or `*.example.com`: any name under it (not example.com itself); with
 * `port` when the entry named one (`example.com:8080`), and then only that port.
 */
export type HostPattern = ({ exact: string } | { suffix: string }) & { port?: number };

/** The port a request to `url` goes to: the URL's own, or the scheme's (80, 443). */
export function urlPort(url: URL): number {
  return Number(url.port) || (url.protocol === "https:" ? 443 : 80);
}

/**
 * `host:port` and `[v6]:port` split into host and port; text without a port unchanged (an IPv6
 * address without brackets has no port). Undefined for a port outside 1–65535.
 */
export function splitPort(text: string): { host: string; port?: number } | undefined {
  const match = /^\[([^\]]*)\]:([0-9]{1,5})$/.exec(text) ?? /^([^:[\]]*):([0-9]{1,5})$/.exec(text);
  if (!match) return { host: text };
  const port = Number(match[2]);
  if (port < 1 || port > 65_535) return undefined;
  return { host: match[1] as string, port };
}

/**
 * A host as the rules compare it: lowercase, no brackets, no trailing dot, an IP in its usual
 * spelling (an IPv4-mapped IPv6 address as its IPv4 address).
 */
export function hostKey(hostname: string): string {
  const ip = hostLiteral(hostname);
  if (ip) return formatIp(unmapped(ip));
  return hostname.toLowerCase().replace(/\.$/, "");
}

/** A name as the URL parser writes it (IDN to punycode, lowercase), or undefined if it is none. */
function normalName(text: string): string | undefined {
  if (text === "" || /[\s/?#@\\:[\]]/.test(text)) return undefined;
  const hostname = URL.parse(`http://${text}/`)?.hostname;
  if (!hostname || hostLiteral(hostname)) return undefined;
  return hostname.replace(/\.$/, "");
}

function hostPattern(t: string): HostPattern | undefined {
  if (t.startsWith("*.")) {
    const base = normalName(t.slice(2));
    return base === undefined ? undefined : { suffix: `.${base}` };
  }
  const ip = hostLiteral(t);
  if (ip) return { exact: formatIp(unmapped(ip)) };
  const name = normalName(t);
  return name === undefined ? undefined : { exact: name };
}

/**
 * `example.com`, `*.example.com` or an IP address, each optionally with `:port` (an IPv6 address in
 * brackets then: `[::1]:8080`); undefined for anything else.
 */
export function parseHostPattern(text: string): HostPattern | undefined {
  const split = splitPort(text.trim());
  const pattern = split && hostPattern(split.host);
  if (!pattern) return undefined;
  return split?.port === undefined ? pattern : { ...pattern, port: split.port };
}

/** Whether the host `key` (see hostKey) on `port` matches; a pattern with a port needs that port. */
export function hostMatches(key: string, pattern: HostPattern, port?: number): boolean {
  return (pattern.port === undefined || pattern.port === port) && nameMatches(key, pattern);
}

/** Whether the host `key` matches, whatever the pattern's port. */
function nameMatches(key: string, pattern: HostPattern): boolean {
  if ("exact" in pattern) return key === pattern.exact;
  return key.endsWith(pattern.suffix) && key.length > pattern.suffix.length;
}

/** An address range the operator allows, on one port when the entry named one. */
export type AllowedRange = Cidr & { port?: number };

/** Where an allow_private list comes from, for the words of refusals and errors. */
export interface AllowSetting {
  /** The setting as people write it: `[moves.web] allow_private`. */
  readonly name: string;
  /** Its path in the config, given with CONFIG_INVALID: `moves.web.allow_private`. */
  readonly path: string;
  /** Who fetches, in "which web_fetch never connects to". */
  readonly who: string;
}

/** The operator's exceptions: address ranges, and names whose addresses may be private. */
export interface AllowPrivate {
  readonly ranges: readonly AllowedRange[];
  readonly hosts: readonly HostPattern[];
  readonly setting: AllowSetting;
}

/**
 * Parses an allow_private list; a bad entry is CONFIG_INVALID naming it and the setting.
 *
 * @example
 * parseAllowPrivate(["10.0.0.5", "127.0.0.1:8080"], { name: "[moves.web] allow_private", path: "moves.web.allow_private", who: "web_fetch" });
 */
export function parseAllowPrivate(entries: readonly string[], setting: AllowSetting): AllowPrivate {
  const ranges: AllowedRange[] = [];
  const hosts: HostPattern[] = [];
  for (const entry of entries) {
    const split = splitPort(entry.trim());
    const range = split && parseCidr(split.host);
    const host = range || !split || split.host.includes("/") ? undefined : parseHostPattern(entry);
    if (range) ranges.push(split?.port === undefined ? range : { ...range, port: split.port });
    else if (host) hosts.push(host);
    else
      throw new SparError(
        "CONFIG_INVALID",
        `${setting.name}: ${JSON.stringify(entry)} is not an IP address, a CIDR range (192.168.1.0/24) or a host name (intranet.local, *.corp.example), each optionally with :port`,
        { path: setting.path },
      );
  }
  return { ranges, hosts, setting };
}

// Names of metadata services, refused before any lookup (their addresses are refused too).
const METADATA_NAMES = new Set([
  "metadata.google.internal",
  "metadata.goog",
  "metadata",
  "instance-data",
  "instance-data.ec2.internal",
]);

/** Whether the host `key` (see hostKey) names a cloud metadata service: refused before any lookup. */
export function isMetadataName(key: string): boolean {
  return METADATA_NAMES.has(key) || key.endsWith(".metadata.google.internal");
}

// Kinds no entry unlocks: there is no web server to read there, or it is a credential endpoint.
const NEVER = new Set(["metadata", "unspecified", "multicast", "reserved"]);

/** A loopback range listed as such (inside 127.0.0.0/8, or ::1): the only way to reach loopback. */
function isLoopbackRange(range: Cidr): boolean {
  if (range.ip.family === 4) return range.prefix >= 8 && range.ip.bytes[0] === 127;
  return range.prefix === 128 && classifyIp(range.ip) === "loopback";
}

/**
 * Why the fetcher may not connect to `ip` on `port` for the host `key`, or undefined when it may.
 * Public addresses pass; a private one passes when an allow_private range holds it or an
 * allow_private name matches the host; a loopback one only when a listed loopback range holds it (a
 * name never unlocks loopback, nor does a wide range such as 0.0.0.0/0); an entry with a port
 * allows that port only; metadata, unspecified, multicast and reserved addresses never pass.
 */
export function addressRefusal(key: string, ip: Ip, allow: AllowPrivate, port: number): string | undefined {
  const kind = classifyIp(ip);
  if (kind === "public") return undefined;
  const said = `${formatIp(ip)} is ${KIND_WORDS[kind]}`;
  const { name, who } = allow.setting;
  if (NEVER.has(kind)) return `${said}, which ${who} never connects to`;
  const address = unmapped(ip);
  // The entries that name this address or host, whatever their port.
  const ranges = allow.ranges.filter(
    (r) => inCidr(address, r) && (kind !== "loopback" || isLoopbackRange(r)),
  );
  const hosts = kind === "loopback" ? [] : allow.hosts.filter((p) => nameMatches(key, p));
  const entries: { port?: number }[] = [...ranges, ...hosts];
  if (entries.some((e) => e.port === undefined || e.port === port)) return undefined;
  if (entries.length > 0) {
    const ports = [...new Set(entries.map((e) => e.port))];
    return `${said} (${name} allows it on port${ports.length > 1 ? "s" : ""} ${ports.join(", ")} only, not ${port})`;
  }
  return kind === "loopback"
    ? `${said} (only a loopback address listed itself in ${name} can be fetched)`
    : `${said} (the operator can allow it in ${name})`;
}
