/**
 * The Slack channel (@slack/bolt, Events API), activated when config.toml has a `[channels.slack]`
 * table. At apply it reads the bot token and the signing secret (either missing stops the daemon).
 * When the daemon is ready, bolt checks the token (auth.test) and the tunnel gives the events URL,
 * `<tunnel url><path>`: Slack has no API to set it, so it is logged and shown in `spar channel
 * status` for the user to paste as the app's Request URL. Deliveries go through the webhook route
 * (webhook.ts) and the shared gate, then to bolt, whose `message` listener hands them to the shared
 * relay: the fighter's turn, with an ⏳ reaction standing in for typing (typing.ts), and the reply
 * posted with bolt's `chat.postMessage` in parts of at most 3,000 characters. Approve / Deny buttons
 * for a waiting call, and their presses (interactivity, at the same URL): approvals.ts.
 */

import { type ChannelAdapter, definePlugin } from "../../sdk/index.js";
import {
  createApprovalDesk,
  createChannelGate,
  createChannelRecords,
  createChannelRelay,
  notifyTarget,
  trafficStatus,
  warnAboutSettings,
} from "../../sdk/kits/channels.js";
import { createSlackApprovals } from "./approvals.js";
import { createSlackBolt, slackErrorText } from "./bolt.js";
import { readSecrets, type SlackSettings } from "./settings.js";
import { createReactionTyping } from "./typing.js";
import { type SlackRetry, slackWebhook } from "./webhook.js";

/**
 * The longest message posted, in UTF-16 units. Slack accepts 40,000 characters, but its clients
 * fold a long message behind "Show more" and stop rendering formatting in very long ones; 3,000 keeps
 * each part readable whole.
 */
export const SLACK_LIMIT = 3000;

/** Where the channel stands, for status(). */
interface Connection {
  /** auth.test accepted the token. */
  connected: boolean;
  /** `<tunnel url><path>`: what the app's Event Subscriptions must name as the Request URL. */
  url?: string;
  tokenError?: string;
  tunnelError?: string;
}

export default definePlugin<{ "channels.slack": SlackSettings }>({
  id: "channel-slack",
  apply({ hooks, ring, events, log, env, data }, { "channels.slack": settings }) {
    const secrets = readSecrets(settings, env);
    warnAboutSettings({
      platform: "slack",
      api_root: settings.api_root,
      allowlist: settings.allowlist,
      owners: settings.owners,
      ids: "member ids",
      log,
    });
    const records = createChannelRecords(data, ring);
    const gate = createChannelGate({
      platform: "slack",
      allowlist: settings.allowlist,
      rate_per_minute: settings.rate_per_minute,
      deliveries: records.deliveries,
    });
    const state: Connection = { connected: false };
    const bolt = createSlackBolt({
      token: secrets.token,
      apiRoot: settings.api_root,
      log,
      onMessage: ({ chat, sender, text, ts }) =>
        typing.around(chat, ts, () => relay.deliver({ chat, sender, text })),
    });
    const typing = createReactionTyping(bolt.client, log);
    const relay = createChannelRelay({
      platform: "slack",
      fighter: settings.fighter,
      io: {
        typing: (chat) => typing.typing(chat),
        post: async (chat, text) => {
          const answer = await bolt.client.chat.postMessage({ channel: chat, text });
          return String(answer.ts);
        },
        limit: SLACK_LIMIT,
      },
      owners: settings.owners,
      ring,
      records,
      events,
      log,
    });

    const buttons = createSlackApprovals({
      client: () => bolt.client,
      desk: createApprovalDesk({
        platform: "slack",
        owners: settings.owners,
        allowlist: settings.allowlist,
        log,
      }),
      gate,
      log,
    });

    let connecting: Promise<void> | undefined;
    let publishing: Promise<void> | undefined;
    const dispatching = new Set<Promise<void>>();

    /** Hands a gated message to bolt once the token is known good; a channel without one drops it. */
    function dispatch(envelope: Record<string, unknown>, retry: SlackRetry | undefined): void {
      const work = (async () => {
        await connecting;
        if (!state.connected) {
          log.warn("slack: message dropped: the bot token was not checked", { error: state.tokenError });
          return;
        }
        await bolt.dispatch(envelope, retry);
      })()
        .catch((err: unknown) => log.error("slack: delivery failed", { error: String(err) }))
        .finally(() => dispatching.delete(work));
      dispatching.add(work);
    }

    async function connect(): Promise<void> {
      try {
        await bolt.connect();
        state.connected = true;
        log.info("slack: the bot token was accepted (auth.test)");
      } catch (err) {
        const why = slackErrorText(err);
        state.tokenError =
          (err as { code?: unknown }).code === "slack_webapi_platform_error"
            ? `Slack did not accept the bot token in ${settings.token_env} (${why}); run \`spar channel setup slack\``
            : `could not reach Slack at ${settings.api_root} to check the bot token (${why})`;
        log.error(`slack: ${state.tokenError}`);
      }
    }

    async function publish(): Promise<void> {
      try {
        const { url } = await ring.tunnel.open();
        state.url = `${url}${settings.path}`;
        log.info("slack: the events URL (paste it in the app's Event Subscriptions as the Request URL)", {
          url: state.url,
        });
      } catch (err) {
        state.tunnelError = `no tunnel, so Slack cannot reach the events URL: ${(err as Error).message}`;
        log.error(`slack: ${state.tunnelError}`);
      }
    }

    const adapter: ChannelAdapter = {
      platform: "slack",
      async send(text, chat) {
        const target = notifyTarget("slack", chat, settings.notify_chat);
        return { chat: target, message_ids: await relay.send(target, text) };
      },
      async status() {
        const error = [state.tokenError, state.tunnelError].filter(Boolean).join("; ");
        return {
          platform: "slack",
          mode: "webhook",
          connected: state.connected,
          ...(state.url ? { webhook_url: state.url } : {}),
          fighter: settings.fighter,
          ...trafficStatus(gate, relay),
          ...(error ? { error } : {}),
        };
      },
      approvals: buttons.approvals,
    };

    hooks.channel.resolve.tap((platform) => (platform === "slack" ? adapter : undefined));
    hooks.arena.routes.tap((routes) => {
      routes.add(
        slackWebhook({
          path: settings.path,
          signingSecret: secrets.signingSecret,
          gate,
          relay,
          dispatch,
          press: buttons.press,
          log,
        }),
      );
    });
    // Not awaited, so a slow or unreachable Slack (or tunnel) never holds up the start; before the
    // Arena's tap opens the webhook listener, so the first delivery finds `connecting` set and waits
    // for it. Nothing here needs the listener: Slack is told the URL by hand.
    hooks.daemon.ready.tap(
      () => {
        connecting = connect();
        publishing = publish();
      },
      { phase: "early" },
    );
    hooks.daemon.close.tap(async () => {
      await Promise.all([connecting, publishing]);
      await Promise.allSettled([...dispatching]);
      await relay.idle();
    });
  },
});
