/**
 * What every channel does with a message that passed its gate: the chat's own bout with the
 * channel's fighter (one conversation per chat, kept in the kit's records), a typing indicator while
 * the turn runs, the reply split to the platform's limit and posted, the turn's sender named
 * (`<platform>:<id>`, which the identity plugin counts on the fighter's relationships), the chat
 * recorded as one the fighter's `channel_notify` may post to, and `channel.inbound` /
 * `channel.outbound` events. A message from anyone but the channel's owners starts a tainted turn
 * (`{kind: "channel", detail: "<platform>:<chat>:<sender>"}`): an allowlist says who may talk to
 * the fighter, not whose words may steer it. The platform plugin supplies only the two calls that differ: `typing`
 * and `post`.
 */
import { type EventBus, isSparError, type Logger, type RingServices } from "../../sdk/index.js";
import { observe, observing } from "../../sdk/observe.js";
import { errorCode } from "../observe-points.js";
import type { ChannelRecords } from "./records.js";
import { splitMessage } from "./split.js";

const deliveryEnd = (_value: unknown, error: unknown) =>
  error === undefined ? { outcome: "ok" } : { outcome: "error", error_code: errorCode(error) };

/** The two calls a platform supplies to the relay (and the length of its messages). */
export interface PlatformIo {
  /** Shows "typing…" in the chat (one call lasts a few seconds on every platform). */
  typing(chat: string): Promise<void>;
  /** Posts one piece of text; returns the platform's message id. */
  post(chat: string, text: string): Promise<string>;
  /** The longest text one message may hold. */
  limit: number;
}

/** A message that passed the gate, as the relay takes it. */
export interface InboundMessage {
  chat: string;
  /** The sender's platform id (the allowlist's form). */
  sender: string;
  text: string;
}

/** A channel's relay (`createChannelRelay`): turns for inbound messages, replies and notices posted. */
export interface ChannelRelay {
  /** Runs the fighter's turn for `message` and posts the reply; never throws (failures are posted and logged). */
  deliver(message: InboundMessage): Promise<void>;
  /** Posts text the fighter did not answer to (channel_notify), split to the limit. */
  send(chat: string, text: string, fighterId?: string): Promise<string[]>;
  /** Settles once every delivery in progress has ended (shutdown, tests). */
  idle(): Promise<void>;
  readonly counts: { outbound: number; last_inbound_at?: string };
}

/** How often the typing indicator is renewed while a turn runs (platforms show it for ~5 s). */
const TYPING_EVERY_MS = 4_000;

/**
 * The relay of the channel `platform`, answering as the fighter `fighter`: `ring` needs the
 * plugin's `fighters` group (and `records`, made by `createChannelRecords`, its `bouts`).
 *
 * @example
 * const relay = createChannelRelay({ platform: "telegram", fighter: "scribe", io, ring, records, events, log });
 * await relay.send(chat, "Build finished.");
 */
export function createChannelRelay(options: {
  platform: string;
  /** The fighter (id or name) that answers this channel. */
  fighter: string;
  io: PlatformIo;
  ring: RingServices;
  /** Each chat's bout and the chats that reached the fighter (records.ts). */
  records: Pick<ChannelRecords, "bouts" | "chats">;
  events: EventBus;
  log: Logger;
  /**
   * The channel's owners (`owners`, the allowlist's form): their messages are the operator's own.
   * Anyone else's, allowed or not, is untrusted content: the turn starts tainted by it. None: every
   * message is.
   */
  owners?: readonly string[];
}): ChannelRelay {
  const { platform, io, ring, records, events, log } = options;
  const owners = new Set(options.owners ?? []);
  const inFlight = new Set<Promise<void>>();
  const counts: ChannelRelay["counts"] = { outbound: 0 };

  async function post(chat: string, parts: string[], ids: string[]): Promise<void> {
    for (const part of parts) ids.push(await io.post(chat, part));
  }

  async function send(chat: string, text: string, fighterId?: string): Promise<string[]> {
    const parts = splitMessage(text, io.limit);
    const ids: string[] = [];
    // A delivery is a measured point (README "Metrics and traces"), free while none observes.
    if (observing())
      await observe({ kind: "channel_delivery", platform }, () => post(chat, parts, ids), deliveryEnd);
    else await post(chat, parts, ids);
    counts.outbound += parts.length;
    events.publish({
      kind: "channel.outbound",
      platform,
      chat,
      parts: parts.length,
      ...(fighterId ? { fighter_id: fighterId } : {}),
    });
    return ids;
  }

  /**
   * The chat's bout, when it has one that still exists; a new one otherwise, of the chat's own
   * origin, so it is never the latest bout a user's `spar chat` continues (nor the other way round).
   */
  async function turn(fighterId: string, chat: string, text: string, from: string) {
    const origin = `channel:${platform}:${chat}`;
    const sender = { kind: "user", user: `${platform}:${from}`, platform } as const;
    const taint = owners.has(from)
      ? {}
      : { taint: [{ kind: "channel", detail: `${platform}:${chat}:${from}` } as const] };
    const boutId = await records.bouts.get(platform, chat, fighterId);
    if (boutId) {
      try {
        return await ring.fighters.message(fighterId, text, { bout_id: boutId, origin, sender, ...taint });
      } catch (err) {
        if (!isSparError(err, "BOUT_NOT_FOUND")) throw err;
      }
    }
    const reply = await ring.fighters.message(fighterId, text, { bout: "new", origin, sender, ...taint });
    await records.bouts.set(platform, chat, fighterId, reply.bout_id);
    return reply;
  }

  async function run(message: InboundMessage): Promise<void> {
    const { chat, sender, text } = message;
    counts.last_inbound_at = new Date().toISOString();
    let fighterId: string;
    try {
      fighterId = (await ring.fighters.get(options.fighter)).id;
    } catch (err) {
      log.error("channel fighter missing", { platform, fighter: options.fighter, error: String(err) });
      await send(chat, `Sorry, this bot's fighter "${options.fighter}" does not exist.`).catch(
        () => undefined,
      );
      return;
    }
    events.publish({ kind: "channel.inbound", platform, chat, sender, fighter_id: fighterId });
    // Only an allowed sender's message gets here: the chat becomes one the fighter's channel_notify
    // may post to. Recorded before the turn, so a move in this very turn may answer there.
    await records.chats
      .record(platform, chat, fighterId, new Date().toISOString())
      .catch((err: unknown) => log.warn("channel chat not recorded", { platform, error: String(err) }));
    const typing = () => io.typing(chat).catch(() => undefined);
    void typing();
    const timer = setInterval(typing, TYPING_EVERY_MS);
    let answer: string;
    try {
      const reply = await turn(fighterId, chat, text, sender);
      answer = reply.response.trim() || "(no answer)";
    } catch (err) {
      log.warn("channel turn failed", { platform, chat, error: String(err) });
      answer = isSparError(err, "RATE_LIMITED")
        ? `I'm resting (rate limit); try again in ${String(err.extra?.retry_after_s ?? "a few")} seconds.`
        : `Sorry, I could not answer that (${isSparError(err) ? err.code : "INTERNAL"}).`;
    } finally {
      clearInterval(timer);
    }
    try {
      await send(chat, answer, fighterId);
    } catch (err) {
      log.error("channel reply not posted", { platform, chat, error: String(err) });
    }
  }

  return {
    deliver(message) {
      const work = run(message).finally(() => inFlight.delete(work));
      inFlight.add(work);
      return work;
    },
    send,
    async idle() {
      await Promise.allSettled([...inFlight]);
    },
    counts,
  };
}
