import { SparError } from "../sdk/errors.js";
import type { RingServices } from "../sdk/services.js";
import type { Store } from "../sdk/store-types.js";

/**
 * The Ring's services that hand a call to the store as it is (bouts, the store itself). Each looks
 * the store up on use: it opens after the plugins holding these services are applied. (No getters
 * here: the Ring spreads this object into its services.)
 */
export function storeServices(requireStore: () => Store): Pick<RingServices, "bouts" | "store"> {
  return {
    bouts: {
      async messages(boutId) {
        const db = requireStore();
        if (!(await db.bouts.get(boutId)))
          throw new SparError("BOUT_NOT_FOUND", `no bout with id "${boutId}"`);
        return db.messages.list(boutId);
      },
      async turns(boutId) {
        const db = requireStore();
        if (!(await db.bouts.get(boutId)))
          throw new SparError("BOUT_NOT_FOUND", `no bout with id "${boutId}"`);
        return db.turns.list(boutId);
      },
    },
    store: {
      health: () => requireStore().health(),
      integrity: () => requireStore().integrity(),
      backup: (destination) => requireStore().backup(destination),
      rekey: (masterSecret) => requireStore().rekey(masterSecret),
    },
  };
}
