/**
 * A full disk is not a damaged database. SQLite answers SQLITE_FULL when a write finds no space (it
 * rolls the transaction back itself, so nothing of it is written) and file writes answer ENOSPC; both
 * become one catalog error, STORAGE_FULL (507), naming the folder that needs space. Unlike
 * STORE_CORRUPT it never marks the store: reads go on, and writes work again as soon as there is
 * space, with no restart.
 */
import { SparError } from "../../sdk/index.js";

/** True for SQLite's SQLITE_FULL, a file write's ENOSPC / EDQUOT, STORAGE_FULL itself, or an error caused by one. */
export function isStorageFull(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && typeof e === "object" && depth < 5; depth++) {
    const code = (e as { code?: unknown }).code;
    if (
      typeof code === "string" &&
      (code.startsWith("SQLITE_FULL") || code === "ENOSPC" || code === "EDQUOT")
    )
      return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * STORAGE_FULL for a write refused because the disk holding `folder` is full. `what` says what was
 * not written (`nothing was written`, `the backup was not written`).
 *
 * @example
 * if (isStorageFull(err)) throw storageFullError(dirname(dbPath), "nothing was written", err);
 */
export function storageFullError(folder: string, what: string, cause?: unknown): SparError {
  return new SparError(
    "STORAGE_FULL",
    `the disk holding ${folder} is full: ${what}. Free some space there; Spar carries on by itself once there is room (no restart needed), and reads keep working meanwhile`,
    {},
    cause ? { cause } : undefined,
  );
}
