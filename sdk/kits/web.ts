/**
 * `spar/sdk/web`: the web guard, for a move that fetches on a fighter's behalf. A GET that checks
 * every hop (scheme, host, each resolved address) before it connects, to the very address it
 * checked; the rules of what a `network` grant's `hosts` allow; and the address rules (public
 * addresses only, unless the operator's `allow_private` says otherwise; metadata endpoints never).
 * web_fetch (moves-web) is built on these alone.
 *
 * @example
 * import { addressRefusal, guardedGet, hostKey, parseAllowPrivate, systemResolver } from "spar/sdk/web";
 */
export { hostLiteral, type Ip } from "../../lib/web/address.js";
export {
  type FinalHeaders,
  type GuardedGet,
  type GuardedResponse,
  guardedGet,
  type Resolver,
  systemResolver,
} from "../../lib/web/fetch.js";
export {
  type GrantHost,
  grantHosts,
  type HostAllowlist,
  hostAllowed,
  invalidHostEntries,
} from "../../lib/web/host-grants.js";
export {
  type AllowPrivate,
  type AllowSetting,
  addressRefusal,
  type HostPattern,
  hostKey,
  isMetadataName,
  parseAllowPrivate,
  urlPort,
} from "../../lib/web/policy.js";
