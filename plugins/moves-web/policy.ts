/**
 * Where web_fetch may go, beyond the shared address rules of lib/web/policy.ts: a grant's `hosts`
 * allowlist is read by lib/web/host-grants.ts (shared with the sandbox's egress proxy).
 * `[moves.web] allow_private` is read by lib/web/policy.ts's parser, named as WEB_ALLOW so every
 * refusal points at this plugin's setting.
 */

import type { AllowSetting } from "../../sdk/kits/web.js";

/** `[moves.web] allow_private`, as refusals and CONFIG_INVALID name it. */
export const WEB_ALLOW: AllowSetting = {
  name: "[moves.web] allow_private",
  path: "moves.web.allow_private",
  who: "web_fetch",
};
