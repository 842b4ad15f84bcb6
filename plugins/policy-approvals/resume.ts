/**
 * Turns left waiting for an approval are taken up again (issue 30, part C): at start, every turn
 * the store holds `awaiting_approval` (a daemon stopped, or killed, while it waited); on a cluster
 * also when a request is answered whose turn no node here runs (its node died). The kernel runs the
 * turn on from its stored steps under the fighter's lease (one node wins; the others get CONFLICT),
 * and its calls find their requests again (gate.ts `resumedCall`): a pending one is waited for, an
 * approved one let through once. A channel's turn posts its reply to its chat through the channel
 * kit, as the relay would have; until the outbox (issue 35), a reply the platform refuses then is
 * logged and lost.
 */
import { type EventBus, isSparError, type Logger, type RingServices } from "../../sdk/index.js";
import type { Records } from "./records.js";

export function createResumer(deps: {
  ring: Pick<RingServices, "fighters" | "channels" | "clustered">;
  records: Records;
  events: EventBus;
  log: Logger;
}) {
  const { ring, records, log } = deps;
  /** Turns this node is taking up, so an answer does not queue a second attempt here. */
  const taking = new Set<string>();

  async function takeUp(turnId: string): Promise<void> {
    if (taking.has(turnId)) return;
    taking.add(turnId);
    try {
      const origin = (await records.forTurn(turnId)).at(-1)?.origin ?? "";
      log.info("approvals: taking up a turn that waited for an approval", { turn: turnId });
      const result = await ring.fighters.resume(turnId);
      const [kind, platform, ...chat] = origin.split(":");
      if (kind !== "channel" || !platform) return;
      const adapter = await ring.channels.resolve(platform);
      await adapter?.send(result.response.trim() || "(no answer)", chat.join(":"));
    } catch (err) {
      // Another node took it up first, or it no longer waits.
      if (isSparError(err, "CONFLICT")) return;
      log.warn("approvals: a turn taken up again failed", { turn: turnId, error: String(err) });
    } finally {
      taking.delete(turnId);
    }
  }

  return {
    /** At start: every turn left waiting. Not awaited: each runs in its fighter's queue. */
    async start(): Promise<void> {
      for (const turn of await ring.fighters.awaiting()) void takeUp(turn.id);
    },
    /**
     * On a cluster, an answer to a request whose turn may have lost its node: taken up if it still
     * waits in the store (the node running it, if alive, holds the lease until it ends: then the
     * turn no longer waits, and this attempt ends as CONFLICT).
     */
    answered(turnId: string): void {
      if (ring.clustered) void takeUp(turnId);
    },
  };
}
