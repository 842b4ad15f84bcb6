/** Warnings every channel logs at start about settings that work but are probably not meant. */
import type { Logger } from "../../sdk/index.js";
import { isLoopbackHost } from "../loopback.js";

/**
 * Logs, at a channel's start, settings that work but are probably not meant: a plain-http
 * `api_root` to another machine (the token would travel unencrypted), an owner not on the
 * allowlist, an empty allowlist.
 */
export function warnAboutSettings(options: {
  platform: string;
  api_root: string;
  allowlist: readonly unknown[];
  /** The channel's owners: each should be on the allowlist, or their messages are refused. */
  owners?: readonly unknown[];
  /** What the allowlist holds, for the advice: "numeric user ids", "member ids". */
  ids: string;
  log: Logger;
}): void {
  const { platform, log } = options;
  const root = new URL(options.api_root);
  if (root.protocol === "http:" && !isLoopbackHost(root.hostname)) {
    log.warn(`${platform}: api_root is plain http to another machine: the bot token travels unencrypted`, {
      api_root: options.api_root,
    });
  }
  const allowed = new Set(options.allowlist.map(String));
  const outside = (options.owners ?? []).map(String).filter((id) => !allowed.has(id));
  if (outside.length > 0) {
    log.warn(
      `${platform}: owners ${outside.join(", ")} are not on the allowlist, so their messages are refused; add them to [channels.${platform}] allowlist too`,
    );
  }
  if (options.allowlist.length === 0) {
    log.warn(
      `${platform}: the allowlist is empty, so every sender is refused; add ${options.ids} to [channels.${platform}] allowlist`,
    );
  }
}
