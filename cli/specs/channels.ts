import type { CommandSpec } from "../command-spec.js";
import { as } from "./shared.js";

/** Chat platforms. */
export const CHANNELS: CommandSpec[] = [
  {
    name: "channel",
    summary: "Messaging channels (Telegram, Slack, Discord) and the tunnel their webhooks come through",
    actions: [
      {
        name: "setup",
        args: "<platform>",
        summary:
          "Set up telegram, slack or discord: token checked, allowlist, secrets in .env, tunnel, webhook (asks on a terminal)",
        options: [
          {
            flag: "--token",
            value: "token|-",
            summary: "The bot token (- reads it from stdin); default: the saved one",
          },
          { flag: "--allow", value: "id,id", summary: "Who may talk to the bot: the platform's user ids" },
          {
            flag: "--owner",
            value: "id,id|none",
            summary:
              "Whose messages are your own (on the allowlist too); anyone else's taints the turn (default: the saved ones, else none)",
          },
          {
            flag: "--fighter",
            value: "name|id",
            summary: "The fighter that answers (default: the saved one, else spar)",
          },
          {
            flag: "--tunnel",
            value: "quick|named|manual",
            summary: "How platforms reach this machine (default: quick)",
          },
          {
            flag: "--url",
            value: "url",
            summary: "manual: the public URL that forwards to the webhook listener",
          },
          {
            flag: "--name",
            value: "tunnel",
            summary: "named: the tunnel made with cloudflared tunnel create",
          },
          { flag: "--hostname", value: "host", summary: "named: the tunnel's public host name" },
          {
            flag: "--api-root",
            value: "url",
            summary: "The platform's API root (a self-hosted server, a test's fake)",
          },
          { flag: "--signing-secret", value: "secret", summary: "slack: the app's Signing Secret" },
          {
            flag: "--public-key",
            value: "hex",
            summary: "discord: the application's Public Key (default: asked of Discord)",
          },
          {
            flag: "--application-id",
            value: "id",
            summary: "discord: the application id (default: asked of Discord)",
          },
          { flag: "--yes", summary: "Save without asking for confirmation" },
        ],
      },
      {
        name: "list",
        args: "",
        summary: "Every configured channel: connected, fighter, allowlist, messages",
      },
      {
        name: "status",
        args: "<platform>",
        summary:
          "One channel: webhook URL (and whether it is the tunnel's), last inbound, counts, refusals, error",
      },
      {
        name: "remove",
        args: "<platform>",
        summary: "Deregister the webhook (Telegram), remove the channel's table and secrets",
      },
      {
        name: "tunnel",
        args: "",
        summary: "The tunnel's public URL; with --mode, change [tunnel]",
        options: [
          { flag: "--mode", value: "quick|named|manual", summary: "The tunnel to use from the next start" },
          {
            flag: "--url",
            value: "url",
            summary: "manual: the public URL that forwards to the webhook listener",
          },
          {
            flag: "--name",
            value: "tunnel",
            summary: "named: the tunnel made with cloudflared tunnel create",
          },
          { flag: "--hostname", value: "host", summary: "named: the tunnel's public host name" },
        ],
      },
    ],
    run: async ({ action, args, options }) =>
      (await import("../commands/channel.js")).channel(action, args, as(options)),
  },
];
