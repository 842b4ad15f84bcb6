/** Plugins' collections on PostgreSQL: being built (issue 29); every call fails until then. */
import type { CollectionStore } from "../../sdk/index.js";
import { SparError } from "../../sdk/index.js";
import type { StoreContext } from "./context.js";

export function createCollections(_ctx: StoreContext): CollectionStore {
  const missing = (): never => {
    throw new SparError("STORE_FAILED", "store-postgres does not hold plugin collections yet");
  };
  return {
    ensure: async () => missing(),
    reader: { get: async () => missing(), find: async () => missing(), count: async () => missing() },
    transact: async () => missing(),
  };
}
