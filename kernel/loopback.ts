/** Loopback addresses and names: what "from this machine" means for the API and the audit. */

/** A peer address on loopback: 127.0.0.0/8 or ::1, also IPv4-mapped. */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (!address) return false;
  const a = address.toLowerCase().replace(/^::ffff:/, "");
  return a === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(a);
}

/** A host name on loopback: `localhost`, 127.0.0.0/8 or ::1, bracketed or not, with or without a port. */
export function isLoopbackHost(host: string | undefined): boolean {
  if (!host) return false;
  const h = host.toLowerCase();
  const bare = h.startsWith("[")
    ? h.slice(1, h.indexOf("]"))
    : h.includes(":") && h.indexOf(":") === h.lastIndexOf(":")
      ? h.slice(0, h.indexOf(":"))
      : h;
  return bare === "localhost" || isLoopbackAddress(bare);
}
