/**
 * The Telegram channel (grammy's Bot API client, webhook mode only), activated when config.toml has
 * a `[channels.telegram]` table. At apply it reads and checks the two secrets (a missing or weak
 * webhook secret stops the daemon); when the daemon is ready it checks the token (getMe) and
 * registers the tunnel's URL (setWebhook with the secret), at every start; deliveries go through
 * the webhook route (webhook.ts) and the shared gate and relay, which run the fighter's turn and post
 * the reply with typing shown; presses of Approve / Deny buttons too (approvals.ts). `hooks.channel.resolve` hands out the adapter (`channel_notify`,
 * `spar channel status`).
 */
import { Api } from "grammy";
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
import { createTelegramApprovals } from "./approvals.js";
import { type Registration, registerWebhook } from "./registration.js";
import { readSecrets, type TelegramSettings } from "./settings.js";
import { telegramWebhook } from "./webhook.js";

/** Telegram's longest message, in UTF-16 units (sendMessage refuses longer text). */
const TELEGRAM_LIMIT = 4096;
/** How long one Bot API call may take (grammy's default, 500 s, would hold a reply or a shutdown). */
const API_TIMEOUT_S = 30;

export default definePlugin<{ "channels.telegram": TelegramSettings }>({
  id: "channel-telegram",
  apply({ hooks, ring, events, log, env, data }, { "channels.telegram": settings }) {
    const secrets = readSecrets(settings, env);
    warnAboutSettings({
      platform: "telegram",
      api_root: settings.api_root,
      allowlist: settings.allowlist,
      owners: settings.owners,
      ids: "numeric user ids",
      log,
    });
    const api = new Api(secrets.token, { apiRoot: settings.api_root, timeoutSeconds: API_TIMEOUT_S });
    const records = createChannelRecords(data, ring);
    const gate = createChannelGate({
      platform: "telegram",
      allowlist: settings.allowlist.map(String),
      rate_per_minute: settings.rate_per_minute,
      deliveries: records.deliveries,
    });
    const relay = createChannelRelay({
      platform: "telegram",
      fighter: settings.fighter,
      io: {
        typing: async (chat) => {
          await api.sendChatAction(chat, "typing");
        },
        post: async (chat, text) => String((await api.sendMessage(chat, text)).message_id),
        limit: TELEGRAM_LIMIT,
      },
      owners: settings.owners.map(String),
      ring,
      records,
      events,
      log,
    });
    const botId = secrets.token.split(":")[0] ?? "";
    const buttons = createTelegramApprovals({
      api,
      desk: createApprovalDesk({
        platform: "telegram",
        owners: settings.owners.map(String),
        allowlist: settings.allowlist.map(String),
        log,
      }),
      gate,
      botId,
      log,
    });
    const registration: Registration = { connected: false };
    let registering: Promise<void> | undefined;
    const stopping = new AbortController();

    const adapter: ChannelAdapter = {
      platform: "telegram",
      async send(text, chat) {
        const target = notifyTarget("telegram", chat, settings.notify_chat);
        return { chat: target, message_ids: await relay.send(target, text) };
      },
      async status() {
        return {
          platform: "telegram",
          mode: "webhook",
          connected: registration.connected,
          ...(registration.url ? { webhook_url: registration.url } : {}),
          fighter: settings.fighter,
          ...trafficStatus(gate, relay),
          ...(registration.error ? { error: registration.error } : {}),
        };
      },
      approvals: buttons.approvals,
    };

    hooks.channel.resolve.tap((platform) => (platform === "telegram" ? adapter : undefined));
    hooks.arena.routes.tap((routes) => {
      routes.add(
        telegramWebhook({
          path: settings.path,
          secret: secrets.webhookSecret,
          botId,
          gate,
          relay,
          press: buttons.press,
          log,
        }),
      );
    });
    // After the Arena's tap, so the webhook listener already listens when Telegram is told about
    // it; not awaited, so a slow or unreachable Bot API never holds up the start.
    hooks.daemon.ready.tap(
      () => {
        registering = registerWebhook({
          api,
          tunnel: () => ring.tunnel.open(),
          path: settings.path,
          secret: secrets.webhookSecret,
          tokenEnv: settings.token_env,
          state: registration,
          log,
          signal: stopping.signal,
        });
      },
      { phase: "late" },
    );
    hooks.daemon.close.tap(async () => {
      stopping.abort();
      await registering;
      await relay.idle();
    });
  },
});
