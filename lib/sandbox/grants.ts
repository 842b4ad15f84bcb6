/**
 * What network a fighter's grants give the processes its moves start: none without a `network`
 * grant; with one, the hosts it names (a grant without `hosts`, or with `*`, names every host);
 * `full_access` is every host. Either way only through the egress proxy, so only public addresses
 * unless the operator's `[sandbox] allow_private` says otherwise.
 */
import type { Capability } from "../../sdk/types.js";
import { type HostPattern, parseHostPattern } from "../web/policy.js";
import type { EgressRules } from "./egress.js";

export function egressOf(capabilities: readonly Capability[]): Omit<EgressRules, "allow"> | undefined {
  const grants = capabilities.filter((g) => g.type === "network" || g.type === "full_access");
  if (grants.length === 0) return undefined;
  if (grants.some((g) => g.type === "full_access" || g.hosts === undefined)) return {};
  const listed = grants.flatMap((g) => [g.hosts ?? []].flat());
  if (listed.some((h) => h.trim() === "*")) return {};
  return { hosts: listed.map((h) => parseHostPattern(h)).filter((p): p is HostPattern => p !== undefined) };
}
