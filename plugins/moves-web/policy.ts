/**
 * Where web_fetch may go, beyond the shared address rules of lib/web/policy.ts: a grant's `hosts`
 * allowlist (names the URL carries). `[moves.web] allow_private` is read by lib/web/policy.ts's
 * parser, named as WEB_ALLOW so every refusal points at this plugin's setting.
 */

import { type AllowSetting, type HostPattern, parseHostPattern } from "../../lib/web/policy.js";
import type { Capability } from "../../sdk/index.js";

/** `[moves.web] allow_private`, as refusals and CONFIG_INVALID name it. */
export const WEB_ALLOW: AllowSetting = {
  name: "[moves.web] allow_private",
  path: "moves.web.allow_private",
  who: "web_fetch",
};

/**
 * The hosts a fighter's grants allow, or undefined when any grant (full_access included) carries no
 * `hosts`: then every host may be fetched. Entries that are no host name or address match nothing.
 */
export function grantedHosts(
  grants: readonly Capability[],
): { patterns: HostPattern[]; listed: string[] } | undefined {
  if (grants.some((g) => g.hosts === undefined)) return undefined;
  const listed = grants.flatMap((g) => (g.hosts === undefined ? [] : [g.hosts].flat()));
  const patterns = listed.map((h) => parseHostPattern(h)).filter((p): p is HostPattern => p !== undefined);
  return { patterns, listed };
}
