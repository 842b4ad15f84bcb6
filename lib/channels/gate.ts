/**
 * Who a channel lets in: senders on its allowlist, each at most `rate_per_minute` messages a
 * minute, and each delivery once (platforms redeliver what they think was lost). The gate also
 * counts what it refused, for `spar channel status`.
 */

export type GateVerdict = "ok" | "not_allowed" | "rate" | "replay";

export interface ChannelGate {
  /** Whether a delivery (its platform id) from `sender` goes on to the fighter; counts refusals. */
  admit(sender: string, deliveryId: string): GateVerdict;
  /** A delivery whose signature failed (counted here; the Arena answers it). */
  forged(): void;
  readonly counts: { signature: number; allowlist: number; rate: number; replay: number; inbound: number };
  readonly allowlistSize: number;
}

/** How many delivery ids are remembered for the replay check: platforms redeliver within minutes. */
const REMEMBERED = 10_000;

export function createChannelGate(options: {
  /** Sender ids, as the platform names them (Telegram numeric ids as strings). Empty: nobody. */
  allowlist: readonly string[];
  rate_per_minute: number;
  now?: () => number;
}): ChannelGate {
  const allowed = new Set(options.allowlist);
  const now = options.now ?? Date.now;
  const recent = new Map<string, number[]>();
  const seen = new Set<string>();
  const counts = { signature: 0, allowlist: 0, rate: 0, replay: 0, inbound: 0 };
  return {
    admit(sender, deliveryId) {
      if (seen.has(deliveryId)) {
        counts.replay += 1;
        return "replay";
      }
      seen.add(deliveryId);
      if (seen.size > REMEMBERED) seen.delete(seen.values().next().value as string);
      if (!allowed.has(sender)) {
        counts.allowlist += 1;
        return "not_allowed";
      }
      const at = now();
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
    counts,
    allowlistSize: allowed.size,
  };
}
