/**
 * The parts of a `ChannelAdapter` every platform shares: where a message without a chat goes (the
 * channel's `notify_chat`), and the counts `status()` reports from the gate and the relay.
 */
import { type ChannelStatus, SparError } from "../../sdk/index.js";
import type { ChannelGate } from "./gate.js";
import type { ChannelRelay } from "./relay.js";

/** The chat a message goes to: the one given, else the channel's `notify_chat`, else VALIDATION_FAILED. */
export function notifyTarget(platform: string, chat: string | undefined, notifyChat: unknown): string {
  const target = chat ?? (notifyChat === undefined ? undefined : String(notifyChat));
  if (target === undefined || target === "") {
    throw new SparError(
      "VALIDATION_FAILED",
      `give a chat, or set notify_chat in [channels.${platform}] for messages without one`,
    );
  }
  return target;
}

/** The status fields the gate and the relay know: allowlist size, traffic, refusals. */
export function trafficStatus(
  gate: ChannelGate,
  relay: ChannelRelay,
): Pick<ChannelStatus, "allowlist_size" | "last_inbound_at" | "inbound" | "outbound" | "refused"> {
  const { signature, allowlist, rate, inbound } = gate.counts;
  return {
    allowlist_size: gate.allowlistSize,
    ...(relay.counts.last_inbound_at ? { last_inbound_at: relay.counts.last_inbound_at } : {}),
    inbound,
    outbound: relay.counts.outbound,
    refused: { signature, allowlist, rate },
  };
}
