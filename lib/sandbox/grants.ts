/**
 * What network a fighter's grants give the processes its moves start: none without a `network`
 * grant; with one, the hosts it names, read as lib/web/host-grants.ts says (as web_fetch reads them);
 * `full_access` is every host. Either way only through the egress proxy, so only public addresses
 * unless the operator's `[sandbox] allow_private` says otherwise.
 */
import type { Capability } from "../../sdk/types.js";
import { grantHosts, type HostAllowlist } from "../web/host-grants.js";
import type { EgressRules } from "./egress.js";

/**
 * The network of a turn: each fighter in it (the one running, and every fighter that asked for
 * the turn) must hold a network grant, and a host must be one every grant names.
 */
export function egressOf(sets: readonly (readonly Capability[])[]): Omit<EgressRules, "allow"> | undefined {
  const hostSets: HostAllowlist[] = [];
  for (const capabilities of sets) {
    const one = egressOfOne(capabilities);
    if (one === undefined) return undefined;
    if (one.hosts) hostSets.push(one.hosts);
  }
  return hostSets.length > 0 ? { hostSets } : {};
}

function egressOfOne(capabilities: readonly Capability[]): { hosts?: HostAllowlist } | undefined {
  const grants = capabilities.filter((g) => g.type === "network" || g.type === "full_access");
  if (grants.length === 0) return undefined;
  const hosts = grantHosts(grants);
  return hosts === undefined ? {} : { hosts };
}
