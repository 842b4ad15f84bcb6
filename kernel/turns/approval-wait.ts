import { isShutdown } from "../../sdk/cancel.js";
import type { Store } from "../../sdk/store-types.js";
import type { TaintSource } from "../../sdk/types.js";
import type { FighterRegistry } from "../fighters/fighter-registry.js";

/**
 * A running turn whose call waits for an operator's answer (issue 30): the turn is recorded
 * `awaiting_approval` (with its taint so far) and its fighter shows it, until `wait` settles. Then
 * it runs again, unless the daemon is stopping: it stays waiting, and the next start takes it up
 * from its stored steps (`message-path` `resume`). A turn not running here just waits.
 */
export function createApprovalWait(deps: {
  running: ReadonlyMap<string, { controller: AbortController; turn_id?: string }>;
  fighters: FighterRegistry;
  store: () => Store;
}) {
  return async <T>(turnId: string, taint: readonly TaintSource[], wait: () => Promise<T>): Promise<T> => {
    const [fighterId, active] = [...deps.running].find(([, a]) => a.turn_id === turnId) ?? [];
    if (!fighterId || !active) return wait();
    const live = await deps.fighters.lookup(fighterId);
    await deps.store().turns.pause(turnId, taint);
    deps.fighters.setStatus(live, "awaiting_approval");
    try {
      return await wait();
    } finally {
      const { signal } = active.controller;
      if (!isShutdown(signal.reason)) {
        await deps.store().turns.resume(turnId);
        if (!signal.aborted) deps.fighters.setStatus(live, "fighting");
      }
    }
  };
}
