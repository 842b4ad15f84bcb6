/**
 * The Discord channel (kind `channel`, imported only when config.toml has `[channels.discord]`):
 * plain messages arrive through the discord.js gateway and are answered in their channel; the `/ask`
 * slash command arrives signed at the HTTP interactions endpoint on the webhook listener and is
 * answered with follow-ups; Approve / Deny buttons for a waiting call are posted and pressed there
 * too (approvals.ts). Both paths pass the same gate (allowlist, per-sender rate, each delivery
 * once) and reach the fighter through the shared relay, one conversation per channel.
 *
 * At start the gateway connects and, through the tunnel, the endpoint and `/ask` are registered;
 * either may fail without stopping the daemon: `spar channel status discord` says why.
 */
import { REST } from "discord.js";
import { type ChannelAdapter, definePlugin, SparError } from "../../sdk/index.js";
import {
  createApprovalDesk,
  createChannelGate,
  createChannelRecords,
  createChannelRelay,
  type GateVerdict,
} from "../../sdk/kits/channels.js";
import { createDiscordApprovals } from "./approvals.js";
import { createAskRunner, interactionsRoute } from "./endpoint.js";
import { createGateway } from "./gateway.js";
import { registerInteractions } from "./register.js";
import { type DiscordSettings, readSecrets } from "./settings.js";

const SNOWFLAKE = /^\d{17,20}$/;

export default definePlugin<{ "channels.discord": DiscordSettings }>({
  id: "channel-discord",
  apply({ hooks, ring, events, log, env, data }, { "channels.discord": settings }) {
    const secrets = readSecrets(settings, env);
    const api = `${settings.api_root}/api`;
    const records = createChannelRecords(data, ring);
    const gate = createChannelGate({
      platform: "discord",
      allowlist: settings.allowlist,
      rate_per_minute: settings.rate_per_minute,
      deliveries: records.deliveries,
    });
    // Its own REST client, so slash commands and their registration work whatever the gateway does.
    const rest = new REST({ api }).setToken(secrets.token);
    let stopping = false;
    let lastInboundAt: string | undefined;
    let registered: string | undefined;
    let registrationError: string | undefined;

    const gateway = createGateway({
      token: secrets.token,
      api,
      log,
      async onMessage(message) {
        if (stopping) return;
        let verdict: GateVerdict;
        try {
          verdict = await gate.admit(message.sender, message.id);
        } catch (err) {
          log.error("discord: message not taken in (the store failed)", { error: String(err) });
          return;
        }
        if (verdict === "not_allowed" || verdict === "rate") {
          // No HTTP answer exists on the gateway: the refusal is silence, and a log line.
          const why = verdict === "rate" ? "over the rate" : "not on the allowlist";
          log.warn(`discord: message refused (${why})`, { user: message.sender });
        }
        if (verdict !== "ok" || stopping) return;
        lastInboundAt = new Date().toISOString();
        void relay.deliver({ chat: message.chat, sender: message.sender, text: message.text });
      },
    });
    const relay = createChannelRelay({
      platform: "discord",
      fighter: settings.fighter,
      io: gateway.io,
      owners: settings.owners,
      ring,
      records,
      events,
      log,
    });
    const asks = createAskRunner({
      rest,
      fighter: settings.fighter,
      ring,
      records,
      events,
      log,
      owners: settings.owners,
    });

    const buttons = createDiscordApprovals({
      rest,
      desk: createApprovalDesk({
        platform: "discord",
        owners: settings.owners,
        allowlist: settings.allowlist,
        log,
      }),
      gate,
      log,
    });

    hooks.arena.routes.tap((routes) => {
      routes.add(
        interactionsRoute({
          path: settings.path,
          publicKey: secrets.publicKey,
          gate,
          rate_per_minute: settings.rate_per_minute,
          asks,
          press: buttons.press,
          log,
          admitted() {
            lastInboundAt = new Date().toISOString();
          },
        }),
      );
    });

    async function register(): Promise<void> {
      try {
        const { url } = await ring.tunnel.open();
        const endpoint = `${url}${settings.path}`;
        await registerInteractions(rest, {
          url: endpoint,
          ...(settings.application_id ? { applicationId: settings.application_id } : {}),
        });
        registered = endpoint;
        registrationError = undefined;
        log.info("discord interactions endpoint registered", { url: endpoint });
      } catch (err) {
        registrationError = `registering the interactions endpoint failed: ${err instanceof Error ? err.message : String(err)}`;
        log.error("discord interactions endpoint not registered", { error: registrationError });
      }
    }

    // After the Arena's tap (phase "normal"), so the webhook listener answers Discord's check of the endpoint;
    // not awaited, so a slow or unreachable Discord never holds up the daemon's start.
    hooks.daemon.ready.tap(
      () => {
        void gateway
          .login()
          .catch((err: unknown) => log.error("discord gateway not connected", { error: String(err) }));
        void register();
      },
      { phase: "late" },
    );

    hooks.daemon.close.tap(async () => {
      stopping = true;
      // Turns in progress end first (shutdown cancels them), so their last words can still be posted.
      await Promise.all([relay.idle(), asks.idle()]);
      await gateway.destroy();
      rest.clearHashSweeper();
      rest.clearHandlerSweeper();
    });

    const adapter: ChannelAdapter = {
      platform: "discord",
      async send(text, chat) {
        const target = chat ?? settings.notify_chat;
        if (!target) {
          throw new SparError(
            "VALIDATION_FAILED",
            "no chat given, and [channels.discord] notify_chat is not set",
          );
        }
        if (!SNOWFLAKE.test(target)) {
          throw new SparError(
            "VALIDATION_FAILED",
            `"${target}" is not a Discord channel id (17 to 20 digits)`,
          );
        }
        return { chat: target, message_ids: await relay.send(target, text) };
      },
      async status() {
        const error = [gateway.error(), registrationError].filter(Boolean).join("; ");
        return {
          platform: "discord",
          mode: "gateway",
          connected: gateway.connected(),
          ...(registered ? { webhook_url: registered } : {}),
          fighter: settings.fighter,
          allowlist_size: gate.allowlistSize,
          ...(lastInboundAt ? { last_inbound_at: lastInboundAt } : {}),
          inbound: gate.counts.inbound,
          outbound: relay.counts.outbound + asks.outbound,
          refused: {
            signature: gate.counts.signature,
            allowlist: gate.counts.allowlist,
            rate: gate.counts.rate,
          },
          ...(error ? { error } : {}),
        };
      },
      approvals: buttons.approvals,
    };
    hooks.channel.resolve.tap((platform) => (platform === "discord" ? adapter : undefined));
  },
});
