/**
 * Who a channel lets in: senders on its allowlist, each at most `rate_per_minute` messages a
 * minute, and each delivery once (platforms redeliver what they think was lost, and an attacker who
 * captured one may replay it). The deliveries taken in are recorded in the kit's collection
 * (records.ts), so one replayed after a restart is still a replay; they are kept two days (its
 * retention), longer than any platform's window (a delivery older than its window is refused on its
 * date before it reaches the gate). The gate also counts what it refused, for `spar channel status`.
 */
import type { ChannelRecords } from "./records.js";

/** What the gate says of a delivery: on to the fighter, or refused (and why). */
export type GateVerdict = "ok" | "not_allowed" | "rate" | "replay";

/** A channel's gate: allowlist, per-sender rate and the replay check, with what it refused counted. */
export interface ChannelGate {
  /** Whether a delivery (its platform id) from `sender` goes on to the fighter; counts refusals. */
  admit(sender: string, deliveryId: string): Promise<GateVerdict>;
  /** A delivery whose signature failed (counted here; the Arena answers it). */
  forged(): void;
  /** A delivery older than the platform's window: a replay that outlived what is remembered. */
  stale(): void;
  readonly counts: { signature: number; allowlist: number; rate: number; replay: number; inbound: number };
  readonly allowlistSize: number;
}

/**
 * The gate of the channel `platform`: its allowlist, its rate, and the deliveries' replay check in
 * the kit's `deliveries` records.
 *
 * @example
 * const gate = createChannelGate({ platform: "telegram", allowlist: ["42"], rate_per_minute: 20, deliveries: records.deliveries });
 * if ((await gate.admit(sender, String(update.update_id))) === "ok") void relay.deliver({ chat, sender, text });
 */
export function createChannelGate(options: {
  platform: string;
  /** Sender ids, as the platform names them (Telegram numeric ids as strings). Empty: nobody. */
  allowlist: readonly string[];
  rate_per_minute: number;
  /**
   * The deliveries taken in (records.ts). Remembered two days (the collection's retention), past the
   * longest window: Telegram's message date, a day, the time Telegram keeps an update it could not deliver.
   */
  deliveries: ChannelRecords["deliveries"];
  now?: () => number;
}): ChannelGate {
  const { platform, deliveries } = options;
  const allowed = new Set(options.allowlist);
  const now = options.now ?? Date.now;
  const recent = new Map<string, number[]>();
  const counts = { signature: 0, allowlist: 0, rate: 0, replay: 0, inbound: 0 };

  return {
    async admit(sender, deliveryId) {
      const at = now();
      // Claimed in the store first, in one insert: of two copies arriving at once (or at two
      // daemons sharing the store), exactly one goes on. A store failure throws: the platform
      // retries a 500, and nothing runs twice.
      if (!(await deliveries.claim(platform, deliveryId, new Date(at).toISOString()))) {
        counts.replay += 1;
        return "replay";
      }
      if (!allowed.has(sender)) {
        counts.allowlist += 1;
        return "not_allowed";
      }
      const times = (recent.get(sender) ?? []).filter((t) => at - t < 60_000);
      if (times.length >= options.rate_per_minute) {
        recent.set(sender, times);
        counts.rate += 1;
        return "rate";
      }
      times.push(at);
      recent.set(sender, times);
      counts.inbound += 1;
      return "ok";
    },
    forged() {
      counts.signature += 1;
    },
    stale() {
      counts.replay += 1;
    },
    counts,
    allowlistSize: allowed.size,
  };
}
