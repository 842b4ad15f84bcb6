import type { Bus, TurnLease } from "../../sdk/events.js";
import type { Store } from "../../sdk/store-types.js";

/** How a turn whose node lost its fighter's lease (it died) ends, as the next holder records it. */
const ORPHANED = {
  code: "INTERRUPTED",
  message: "the daemon running this turn stopped before it ended; its steps so far are kept",
};

/**
 * Each turn runs under its fighter's lease from the bus (granted at once on an in-process bus). On
 * a shared bus, a grant that does not follow this daemon's own last one means another node held the
 * lease since: a turn it left running (its node died) is failed first, and from then on the store
 * refuses that turn's late writes. Losing the lease mid-turn cancels the turn.
 */
export function createTurnLeases(bus: () => Bus, store: () => Store) {
  /** The fence of the last lease this daemon held, per fighter. */
  const fences = new Map<string, number>();
  return {
    async take(fighterId: string, controller: AbortController): Promise<TurnLease> {
      const { leases, shared } = bus();
      const lease = await leases.acquire(fighterId, controller.signal);
      const previous = fences.get(fighterId);
      fences.set(fighterId, lease.fence);
      if (shared && previous !== lease.fence - 1) {
        try {
          await store().turns.abandon(ORPHANED, fighterId);
        } catch (err) {
          await lease.release().catch(() => undefined);
          throw err;
        }
      }
      // Removed at release: an in-process bus hands every turn the same never-lost signal.
      const onLost = () => controller.abort(lease.lost.reason);
      lease.lost.addEventListener("abort", onLost, { once: true });
      return {
        fence: lease.fence,
        lost: lease.lost,
        release: async () => {
          lease.lost.removeEventListener("abort", onLost);
          await lease.release();
        },
      };
    },
  };
}
