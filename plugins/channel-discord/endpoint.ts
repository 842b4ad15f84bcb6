/**
 * The HTTP interactions endpoint on the webhook listener, where Discord POSTs slash commands: each
 * delivery's Ed25519 signature is checked before its body is parsed (401 otherwise), PING is
 * answered, and an allowed `/ask` is acknowledged at once with a deferred response ("thinking…")
 * while the fighter's turn runs; its reply then goes to the interaction's follow-up webhook, split to
 * 2,000 characters. Discord gives the follow-ups 15 minutes.
 *
 * A user not on the allowlist gets 403 and no model call: Discord then shows them "The application
 * did not respond". A replayed interaction and a user over their rate get a note only they see.
 * A press of an Approve / Deny button (a MESSAGE_COMPONENT interaction) is answered by approvals.ts.
 */

import type { KeyObject } from "node:crypto";
import type { REST } from "discord.js";
import { Routes } from "discord.js";
import {
  type EventBus,
  type Logger,
  type PluginRoute,
  type RingServices,
  SparError,
} from "../../sdk/index.js";
import {
  type ChannelGate,
  type ChannelRecords,
  createChannelRelay,
  discordDeliveryOk,
  discordTimestampFresh,
  DISCORD_INTERACTION_WINDOW_S as INTERACTION_WINDOW_S,
  type PlatformIo,
  snowflakeFresh,
} from "../../sdk/kits/channels.js";
import { DISCORD_LIMIT } from "./gateway.js";
import { DEFERRED, ephemeral, type Interaction, PONG, readInteraction } from "./interaction.js";

type Ask = Extract<Interaction, { kind: "ask" }>;

export interface AskRunner {
  /** Runs the turn for an admitted `/ask` and posts its reply as follow-ups; never throws. */
  run(ask: Ask): void;
  /** Settles once every `/ask` in progress has ended. */
  idle(): Promise<void>;
  /** Follow-up messages posted. */
  readonly outbound: number;
}

/**
 * Each `/ask` is relayed on its own, with the interaction's follow-up webhook as its platform: the
 * chat (the channel it was used in) keeps its one conversation with the fighter, shared with the
 * channel's plain messages. No typing is sent: the deferred response already shows the bot thinking.
 */
export function createAskRunner(options: {
  /** REST with the bot token; follow-ups are sent without it (the interaction token is the key). */
  rest: REST;
  fighter: string;
  ring: RingServices;
  records: Pick<ChannelRecords, "bouts" | "chats">;
  events: EventBus;
  log: Logger;
  /** The channel's owners: anyone else's `/ask` starts a tainted turn (the relay's rule). */
  owners: readonly string[];
}): AskRunner {
  const inFlight = new Set<Promise<void>>();
  let outbound = 0;
  return {
    run(ask) {
      const io: PlatformIo = {
        limit: DISCORD_LIMIT,
        typing: async () => undefined,
        async post(_chat, text) {
          const message = (await options.rest.post(Routes.webhook(ask.applicationId, ask.token), {
            body: { content: text, allowed_mentions: { parse: [] } },
            auth: false,
          })) as { id: string };
          outbound += 1;
          return message.id;
        },
      };
      const relay = createChannelRelay({ platform: "discord", ...options, io });
      const work = relay.deliver({ chat: ask.chat, sender: ask.sender, text: ask.prompt });
      inFlight.add(work);
      void work.finally(() => inFlight.delete(work));
    },
    async idle() {
      await Promise.allSettled([...inFlight]);
    },
    get outbound() {
      return outbound;
    },
  };
}

/** The webhook route Discord delivers interactions to. */
export function interactionsRoute(options: {
  path: string;
  publicKey: KeyObject;
  gate: ChannelGate;
  rate_per_minute: number;
  asks: AskRunner;
  /** Answers a press of an Approve / Deny button (approvals.ts): the interaction response. */
  press(pressed: Extract<Interaction, { kind: "press" }>): Promise<unknown>;
  log: Logger;
  /** Called for each admitted `/ask`, before its turn starts. */
  admitted(): void;
}): PluginRoute {
  const { gate, log } = options;
  return {
    listener: "webhook",
    method: "POST",
    path: options.path,
    verify(delivery) {
      // The signing time within Slack's window too: a captured delivery replayed later is refused.
      const ok =
        discordDeliveryOk(delivery.headers, delivery.rawBody, options.publicKey) &&
        discordTimestampFresh(delivery.headers);
      if (!ok) gate.forged();
      return ok;
    },
    async handler({ body }) {
      const interaction = readInteraction(body);
      if (interaction.kind === "ping") return { body: PONG };
      if (!snowflakeFresh(interaction.id)) {
        // Discord makes an interaction and delivers it at once (its token lasts 15 minutes): an old
        // one is a replay of a captured delivery, whatever its signature.
        gate.stale();
        log.warn("discord: interaction refused: older than its window (a replay)", { id: interaction.id });
        throw new SparError(
          "UNAUTHORIZED",
          `an interaction older than ${INTERACTION_WINDOW_S / 60} minutes is refused (a replay)`,
        );
      }
      // A press of an Approve / Deny button (approvals.ts): answered in this response.
      if (interaction.kind === "press") return { body: await options.press(interaction) };
      const verdict = await gate.admit(interaction.sender, interaction.id);
      if (verdict === "not_allowed") {
        log.warn("discord: /ask from a user not on the allowlist", { user: interaction.sender });
        throw new SparError("FORBIDDEN", "this Discord user is not on the bot's allowlist");
      }
      if (verdict === "replay") return { body: ephemeral("This request was already received.") };
      if (verdict === "rate") {
        log.warn("discord: /ask over the sender's rate", { user: interaction.sender });
        return {
          body: ephemeral(
            `You are asking more than ${options.rate_per_minute} times a minute: try again in a minute.`,
          ),
        };
      }
      options.admitted();
      options.asks.run(interaction);
      return { body: DEFERRED };
    },
  };
}
