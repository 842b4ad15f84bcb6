/**
 * IP addresses as bytes, and what kind of place each one is. The fetch guard (fetch.ts) refuses
 * every kind but `public` unless an operator's `allow_private` list lets it through (policy.ts);
 * this file only names the kind. Literals are parsed strictly (dotted quads and RFC 4291 IPv6); the
 * odd spellings a URL may carry (2130706433, 0177.0.0.1, 0x7f.1, 127.1, fullwidth digits) are
 * normalized by the WHATWG URL parser first, see `hostLiteral`. Shared by web_fetch (moves-web) and
 * the skill installer (lib/skills/source.ts).
 */
import { isIPv4, isIPv6 } from "node:net";

/** An IPv4 or IPv6 address as bytes. */
export interface Ip {
  readonly family: 4 | 6;
  /** 4 or 16 bytes, network order. */
  readonly bytes: Uint8Array;
}

export type AddressKind =
  | "public"
  | "loopback"
  | "private"
  | "shared"
  | "link-local"
  | "unique-local"
  | "site-local"
  | "multicast"
  | "unspecified"
  | "reserved"
  | "documentation"
  | "benchmarking"
  | "metadata";

/** Words for a refusal: "127.0.0.1 is a loopback address". */
export const KIND_WORDS: Record<AddressKind, string> = {
  public: "a public address",
  loopback: "a loopback address",
  private: "a private address",
  shared: "a shared (carrier-grade NAT) address",
  "link-local": "a link-local address",
  "unique-local": "a unique-local IPv6 address",
  "site-local": "a site-local IPv6 address",
  multicast: "a multicast address",
  unspecified: "the unspecified address",
  reserved: "a reserved address",
  documentation: "a documentation address",
  benchmarking: "a benchmarking address",
  metadata: "a cloud metadata address",
};

/** A literal IPv4 or IPv6 address (brackets and a zone id allowed), or undefined. Strict forms only. */
export function parseIp(text: string): Ip | undefined {
  let t = text.trim();
  if (t.startsWith("[") && t.endsWith("]")) t = t.slice(1, -1);
  const zone = t.indexOf("%");
  if (zone >= 0 && t.includes(":")) t = t.slice(0, zone);
  if (isIPv4(t)) return { family: 4, bytes: Uint8Array.from(t.split(".").map(Number)) };
  if (isIPv6(t)) return { family: 6, bytes: parseIPv6(t) };
  return undefined;
}

function parseIPv6(text: string): Uint8Array {
  const bytes = new Uint8Array(16);
  let body = text.toLowerCase();
  // A dotted IPv4 tail (::ffff:127.0.0.1) becomes its two groups.
  const dot = body.lastIndexOf(".");
  if (dot >= 0) {
    const colon = body.lastIndexOf(":");
    const v4 = body
      .slice(colon + 1)
      .split(".")
      .map(Number);
    const [a = 0, b = 0, c = 0, d = 0] = v4;
    body = `${body.slice(0, colon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = "", tail] = body.split("::");
  const headGroups = head === "" ? [] : head.split(":");
  const tailGroups = tail === undefined || tail === "" ? [] : tail.split(":");
  const groups =
    tail === undefined
      ? headGroups
      : [...headGroups, ...Array(8 - headGroups.length - tailGroups.length).fill("0"), ...tailGroups];
  groups.forEach((g, i) => {
    const n = Number.parseInt(g, 16);
    bytes[i * 2] = n >> 8;
    bytes[i * 2 + 1] = n & 0xff;
  });
  return bytes;
}

/** The address in its usual spelling: dotted quad, or IPv6 compressed as the URL parser writes it. */
export function formatIp(ip: Ip): string {
  if (ip.family === 4) return ip.bytes.join(".");
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2)
    groups.push(((ip.bytes[i] ?? 0) * 256 + (ip.bytes[i + 1] ?? 0)).toString(16));
  return new URL(`http://[${groups.join(":")}]/`).hostname.slice(1, -1);
}

/**
 * The IP a URL's host names literally, after the WHATWG URL parser's normalization: `2130706433`,
 * `0177.0.0.1`, `0x7f.1`, `127.1` and `127.0.0.1.` all mean 127.0.0.1; `[::ffff:127.0.0.1]` is
 * `[::ffff:7f00:1]`. Undefined for a name (or for text that is no host at all).
 */
export function hostLiteral(host: string): Ip | undefined {
  const direct = parseIp(host);
  if (direct) return direct;
  // Only a host: no path, query, user, nor a port after a bracketed address ("[::1]:" included).
  if (/[\s/?#@\\]/.test(host) || (host.startsWith("[") && !host.endsWith("]"))) return undefined;
  const bracketed = host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
  const hostname = URL.parse(`http://${bracketed}/`)?.hostname;
  return hostname === undefined ? undefined : parseIp(hostname);
}

/** An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is the IPv4 address it carries; others unchanged. */
export function unmapped(ip: Ip): Ip {
  if (ip.family === 6 && startsWith(ip.bytes, MAPPED_PREFIX)) return { family: 4, bytes: ip.bytes.slice(12) };
  return ip;
}

const MAPPED_PREFIX = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];

function startsWith(bytes: Uint8Array, prefix: readonly number[]): boolean {
  return prefix.every((b, i) => bytes[i] === b);
}

export interface Cidr {
  readonly ip: Ip;
  readonly prefix: number;
}

/** `10.0.0.0/8`, `fd00::/8`, or a single address (a /32 or /128). Undefined when it is neither. */
export function parseCidr(text: string): Cidr | undefined {
  const slash = text.indexOf("/");
  const ip = hostLiteral(slash < 0 ? text : text.slice(0, slash));
  if (!ip) return undefined;
  const max = ip.family === 4 ? 32 : 128;
  if (slash < 0) return { ip: unmapped(ip), prefix: max };
  const bits = text.slice(slash + 1);
  if (!/^[0-9]{1,3}$/.test(bits) || Number(bits) > max) return undefined;
  const prefix = Number(bits);
  // ::ffff:10.0.0.0/104 is 10.0.0.0/8: mapped addresses are compared as IPv4.
  if (ip.family === 6 && prefix >= 96 && unmapped(ip).family === 4)
    return { ip: unmapped(ip), prefix: prefix - 96 };
  return { ip, prefix };
}

export function inCidr(ip: Ip, cidr: Cidr): boolean {
  if (ip.family !== cidr.ip.family) return false;
  let bits = cidr.prefix;
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if (((ip.bytes[i] ?? 0) & mask) !== ((cidr.ip.bytes[i] ?? 0) & mask)) return false;
  }
  return true;
}

function table(entries: [string, AddressKind][]): [Cidr, AddressKind][] {
  return entries.map(([text, kind]) => {
    const cidr = parseCidr(text);
    if (!cidr) throw new Error(`bad range ${text}`);
    return [cidr, kind];
  });
}

/**
 * The ranges classifyIp reads, parsed on its first call: parsing them runs node:net's IPv6 check,
 * whose first use compiles a large regular expression (tens of ms), and a daemon that fetches nothing
 * need not pay for it at start. First match wins: the metadata endpoints sit inside link-local,
 * shared and unique-local ranges.
 */
const ranges = once(() => ({
  v4: table([
    ["169.254.169.254/32", "metadata"], // AWS, Azure, GCP, OpenStack, Oracle
    ["169.254.170.2/32", "metadata"], // AWS ECS task credentials
    ["169.254.170.23/32", "metadata"], // AWS EKS pod identity
    ["100.100.100.200/32", "metadata"], // Alibaba Cloud
    ["192.0.0.192/32", "metadata"], // Oracle Cloud (legacy)
    ["0.0.0.0/8", "unspecified"],
    ["10.0.0.0/8", "private"],
    ["100.64.0.0/10", "shared"],
    ["127.0.0.0/8", "loopback"],
    ["169.254.0.0/16", "link-local"],
    ["172.16.0.0/12", "private"],
    ["192.0.0.0/24", "reserved"], // IETF protocol assignments
    ["192.0.2.0/24", "documentation"],
    ["192.88.99.0/24", "reserved"], // the retired 6to4 relay anycast
    ["192.168.0.0/16", "private"],
    ["198.18.0.0/15", "benchmarking"],
    ["198.51.100.0/24", "documentation"],
    ["203.0.113.0/24", "documentation"],
    ["224.0.0.0/4", "multicast"],
    ["240.0.0.0/4", "reserved"], // and 255.255.255.255, the broadcast address
  ]),
  v6: table([
    ["fd00:ec2::254/128", "metadata"], // AWS over IPv6
    ["fd00:ec2::23/128", "metadata"], // AWS EKS pod identity over IPv6
    ["::/128", "unspecified"],
    ["::1/128", "loopback"],
    ["64:ff9b:1::/48", "private"], // local-use NAT64
    ["100::/64", "reserved"], // discard-only
    ["2001:db8::/32", "documentation"],
    ["2001::/23", "reserved"], // IETF assignments: Teredo, benchmarking (2001:2::/48), ORCHID
    ["3fff::/20", "documentation"],
    ["5f00::/16", "reserved"], // SRv6 segment identifiers
    ["fc00::/7", "unique-local"],
    ["fe80::/10", "link-local"],
    ["fec0::/10", "site-local"],
    ["ff00::/8", "multicast"],
  ]),
  globalUnicast: parseCidr("2000::/3") as Cidr,
  nat64: parseCidr("64:ff9b::/96") as Cidr,
  sixToFour: parseCidr("2002::/16") as Cidr,
}));

function once<T>(make: () => T): () => T {
  let value: T | undefined;
  return () => {
    value ??= make();
    return value;
  };
}

/**
 * What kind of place an address is. IPv4-mapped addresses are their IPv4 address; NAT64
 * (64:ff9b::/96) and 6to4 (2002::/16) addresses are the kind of the IPv4 address they embed, so
 * 64:ff9b::7f00:1 is loopback. IPv6 outside 2000::/3 that no rule names is reserved.
 */
export function classifyIp(address: Ip): AddressKind {
  const ip = unmapped(address);
  const { v4, v6, nat64, sixToFour, globalUnicast } = ranges();
  if (ip.family === 4) return v4.find(([cidr]) => inCidr(ip, cidr))?.[1] ?? "public";
  const named = v6.find(([cidr]) => inCidr(ip, cidr))?.[1];
  if (named) return named;
  if (inCidr(ip, nat64)) return classifyIp({ family: 4, bytes: ip.bytes.slice(12) });
  if (inCidr(ip, sixToFour)) return classifyIp({ family: 4, bytes: ip.bytes.slice(2, 6) });
  return inCidr(ip, globalUnicast) ? "public" : "reserved";
}
