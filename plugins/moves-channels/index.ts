/**
 * `channel_notify` (capability `channel_notify`): a fighter, or a gorilla's fighter, posts to a chat
 * on a configured channel through the channel's own adapter. A grant's `scope` (a platform or a list)
 * limits which channels it may post to; `full_access` covers every configured platform.
 *
 * Which chats: the model names them, and a model can be talked into anything, so a named chat must
 * be one that reached the fighter through a sender on the channel's allowlist (the relay records
 * those in the channel kit's collections, which this plugin declares too), or one a grant's
 * `targets` names (`"<platform>:<chat>"`, like `"telegram:-1001234567890"` or `"telegram:@news"`).
 * `full_access` does not lift that. Without a chat the message goes to the channel's `notify_chat`,
 * which the operator chose. In a turn another fighter started, the platform and the chat must be
 * allowed for every caller too.
 */

import { type Capability, definePlugin, type MoveHandler, SparError } from "../../sdk/index.js";
import { type ChannelRecords, createChannelRecords } from "../../sdk/kits/channels.js";

/** The platforms a fighter's grants let it post to; undefined: any. */
function allowedPlatforms(
  grants: readonly { type: string; scope?: string | string[] }[],
): Set<string> | undefined {
  if (grants.some((g) => g.type === "full_access" || (g.type === "channel_notify" && g.scope === undefined)))
    return undefined;
  return new Set(grants.flatMap((g) => (g.scope === undefined ? [] : [g.scope].flat())));
}

/** Whether `chat` of `platform` is a target for this fighter: it reached the fighter, or a grant names it. */
async function permitted(
  chats: ChannelRecords["chats"],
  who: { id: string; grants: readonly Capability[] },
  platform: string,
  chat: string,
): Promise<boolean> {
  const named = who.grants.flatMap((g) => (g.targets === undefined ? [] : [g.targets].flat()));
  if (named.includes(`${platform}:${chat}`)) return true;
  return chats.reached(platform, chat, who.id);
}

export default definePlugin({
  id: "moves-channels",
  apply({ hooks, ring, data }) {
    const { chats } = createChannelRecords(data, ring);
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
        const chat = input.chat as string | undefined;
        if (chat !== undefined) {
          for (const [whose, who] of [
            ["this fighter", { id: fighter.id, grants }] as const,
            ...callers.map(
              (c) => [`fighter ${JSON.stringify(c.name)} (which started this turn)`, c] as const,
            ),
          ]) {
            if (!(await permitted(chats, who, platform, chat))) {
              throw new SparError(
                "CAPABILITY_DENIED",
                `${JSON.stringify(chat)} on ${platform} is not a chat ${whose} may post to: only chats that wrote to it ` +
                  `through the channel's allowlist, or the grant's targets (like "${platform}:<chat>"); leave chat out to post to the channel's notify_chat`,
                { platform, chat },
              );
            }
          }
        }
        const adapter = await ring.channels.resolve(platform);
        if (!adapter) {
          throw new SparError(
            "NOT_FOUND",
            `no channel "${platform}" is configured; configured: ${configured.join(", ") || "none"}`,
          );
        }
        const sent = await adapter.send(input.text as string, chat);
        return { platform, chat: sent.chat, messages: sent.message_ids.length, from: fighter.name };
      },
    };
    hooks.move.resolve.tap((name) => (name === "channel_notify" ? notify : undefined));
  },
});
