/**
 * What every table group is built from: the pool, the cipher, the store's clock, and the shared
 * checks (a live fighter, a known bout) that several groups make inside their transactions.
 */
import type pg from "pg";
import type { Store } from "../../sdk/index.js";
import { SparError } from "../../sdk/index.js";
import type { Cipher } from "./cipher.js";
import type { Db } from "./connection.js";

export interface StoreContext {
  pool: pg.Pool;
  cipher: Cipher;
  now(): string;
}

/** The data methods of a Store; store.ts adds health, integrity, durable, backup and rekey. */
export type StoreData = Omit<Store, "health" | "integrity" | "durable" | "backup" | "rekey">;

/** FIGHTER_NOT_FOUND unless `fighterId` is a live fighter. */
export async function requireLiveFighter(db: Db, fighterId: string): Promise<void> {
  const found = await db.query("SELECT 1 FROM fighters WHERE id = $1 AND killed_at IS NULL", [fighterId]);
  if (found.rowCount === 0) throw new SparError("FIGHTER_NOT_FOUND", `No fighter with id ${fighterId}`);
}

/** BOUT_NOT_FOUND unless `boutId` is a bout. */
export async function requireBout(db: Db, boutId: string): Promise<void> {
  const found = await db.query("SELECT 1 FROM bouts WHERE id = $1", [boutId]);
  if (found.rowCount === 0) throw new SparError("BOUT_NOT_FOUND", `No bout with id ${boutId}`);
}

/**
 * Runs calls with the same key one after another, in call order, and calls with different keys at
 * once. A turn's steps go through its lane: appends started without waiting land in the order they
 * were made, which row locks alone would not promise (they are granted in arrival order on the server).
 */
export function createLanes(): <T>(key: string, work: () => Promise<T>) => Promise<T> {
  const tails = new Map<string, Promise<unknown>>();
  return (key, work) => {
    const previous = tails.get(key) ?? Promise.resolve();
    const next = previous.then(work, work);
    const tail = next.catch(() => undefined);
    tails.set(key, tail);
    void tail.then(() => {
      if (tails.get(key) === tail) tails.delete(key);
    });
    return next;
  };
}
