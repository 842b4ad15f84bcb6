/**
 * better-sqlite3 is synchronous, so this plugin's data layer is written as plain functions, and
 * corruption.ts wraps every one of them once into the kernel's asynchronous Store. `Synced<T>` is the
 * Store's shape with each promise taken off.
 */
import type { Store } from "../../sdk/index.js";
import type { CollectionRows } from "./collections.js";

export type Synced<T> = {
  [K in keyof T]: T[K] extends (...args: infer A) => Promise<infer R>
    ? (...args: A) => R
    : T[K] extends (...args: infer A) => infer R
      ? (...args: A) => R
      : Synced<T[K]>;
};

/**
 * The data methods of a Store, synchronous; corruption.ts adds `health()`, `integrity()` and
 * `durable()`, store.ts `backup()` (backup.ts: it waits for the write batch, so it is asynchronous) and `rekey()` (rekey.ts).
 */
export type StoreData = Synced<
  Omit<Store, "health" | "integrity" | "durable" | "backup" | "rekey" | "collections">
> & {
  /** Plugins' collections, wrapped like the rest; store.ts makes the CollectionStore of them. */
  collectionRows: Synced<CollectionRows>;
};
