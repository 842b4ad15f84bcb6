/**
 * `channel_notify` (capability `channel_notify`): a fighter, or a gorilla's fighter, posts to a chat
 * on a configured channel through the channel's own adapter. A grant's `scope` (a platform or a list)
 * limits which channels it may post to; `full_access` posts anywhere configured. In a turn another
 * fighter started, the platform must be one every caller's grants allow too.
 */
import { definePlugin, type MoveHandler, SparError } from "../../sdk/index.js";

/** The platforms a fighter's grants let it post to; undefined: any. */
function allowedPlatforms(
  grants: readonly { type: string; scope?: string | string[] }[],
): Set<string> | undefined {
  if (grants.some((g) => g.type === "full_access" || (g.type === "channel_notify" && g.scope === undefined)))
    return undefined;
  return new Set(grants.flatMap((g) => (g.scope === undefined ? [] : [g.scope].flat())));
}

export default definePlugin({
  id: "moves-channels",
  apply({ hooks, ring }) {
    const notify: MoveHandler = {
      name: "channel_notify",
      async run(input, { grants, callers, fighter }) {
        const configured = ring.channels.configured();
        const platform =
          (input.platform as string | undefined) ?? (configured.length === 1 ? configured[0] : undefined);
        if (!platform) {
          throw new SparError(
            "VALIDATION_FAILED",
            configured.length === 0
              ? "no channel is configured (spar channel setup <platform>)"
              : `give platform: one of ${configured.join(", ")}`,
          );
        }
        // This fighter's grants, then those of each fighter waiting on the turn: every one must allow it.
        for (const [whose, set] of [
          ["this fighter's", grants] as const,
          ...callers.map(
            (c) => [`fighter ${JSON.stringify(c.name)}'s (which started this turn)`, c.grants] as const,
          ),
        ]) {
          const allowed = allowedPlatforms(set);
          if (allowed && !allowed.has(platform)) {
            throw new SparError(
              "CAPABILITY_DENIED",
              `${whose} channel_notify grant covers ${[...allowed].join(", ") || "no platform"}, not ${platform}`,
            );
          }
        }
        const adapter = await ring.channels.resolve(platform);
        if (!adapter) {
          throw new SparError(
            "NOT_FOUND",
            `no channel "${platform}" is configured; configured: ${configured.join(", ") || "none"}`,
          );
        }
        const sent = await adapter.send(input.text as string, input.chat as string | undefined);
        return { platform, chat: sent.chat, messages: sent.message_ids.length, from: fighter.name };
      },
    };
    hooks.move.resolve.tap((name) => (name === "channel_notify" ? notify : undefined));
  },
});
