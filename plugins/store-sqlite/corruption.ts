/**
 * A damaged database, found by any call or by the integrity check at open, becomes one catalog
 * error: STORE_CORRUPT (503), naming the file and how to recover. The store remembers it, so its
 * health says so until the daemon restarts. Translated in one place: every Store method is wrapped
 * once, here, instead of a try/catch at each call site.
 */
import { basename } from "node:path";
import type { Logger, Store, StoreCheck, StoreHealth } from "../../kernel/sdk.js";
import { SparError } from "../../kernel/sdk.js";
import { type IntegrityOutcome, isCorruptionCode, type RunningCheck, sqliteCode } from "./integrity.js";
import type { StoreData } from "./sync-store.js";

/** True for an SQLite error that says the file is damaged (see isCorruptionCode). */
export function isCorruption(err: unknown): boolean {
  return isCorruptionCode(sqliteCode(err));
}

/** What is wrong and how to recover: the error's message, the log line and `spar doctor`'s. */
export function corruptionDetail(dbPath: string, reason: string): string {
  const name = basename(dbPath);
  return (
    `the database ${dbPath} is damaged (${reason}). To recover: stop the daemon (spar stop); move ${name} ` +
    `aside, with ${name}-wal and ${name}-shm if they exist; restore ${name} and ${name}.salt from a backup ` +
    "(the master key stays as it is). With no backup, moving them aside makes the next start create an " +
    "empty database"
  );
}

export function corruptError(dbPath: string, reason: string, cause?: unknown): SparError {
  return new SparError("STORE_CORRUPT", corruptionDetail(dbPath, reason), {}, cause ? { cause } : undefined);
}

export interface GuardOptions {
  dbPath: string;
  log: Logger;
  /** The integrity check started at open; its outcome marks the store as soon as it arrives. */
  check: RunningCheck;
}

/**
 * Turns the synchronous data layer into the kernel's asynchronous Store: every method of `data` is
 * wrapped once, so it returns a promise and a corruption error becomes STORE_CORRUPT and marks the
 * store corrupt (logged once, naming the file); and adds `health()` and `integrity()`.
 */
export function guardStore(data: StoreData, options: GuardOptions): Store {
  const { dbPath, log, check } = options;
  let health: StoreHealth = { status: "ok" };
  let closed = false;

  const markCorrupt = (reason: string): void => {
    if (health.status === "corrupt") return;
    const detail = corruptionDetail(dbPath, reason);
    health = { status: "corrupt", detail };
    log.error(detail);
  };
  const translate = (err: unknown): unknown => {
    if (!isCorruption(err)) return err;
    const reason = err instanceof Error ? err.message : String(err);
    markCorrupt(reason);
    return corruptError(dbPath, reason, err);
  };

  // Attached now, not when someone asks: a failed check must mark the store even if nobody waits.
  const integrity = check.outcome.then((outcome) => judge(outcome));
  function judge(outcome: IntegrityOutcome): StoreCheck {
    if (outcome.status === "corrupt") markCorrupt(outcome.reason);
    if (outcome.status !== "unchecked") return { ...health, checked: true };
    if (!closed) log.warn(`the integrity check of ${dbPath} could not run: ${outcome.reason}`);
    return {
      ...health,
      checked: false,
      detail: health.detail ?? `the check could not run: ${outcome.reason}`,
    };
  }

  const guarded: Record<string, unknown> = {};
  for (const [name, member] of Object.entries(data)) {
    guarded[name] =
      typeof member === "function"
        ? guardCall(member as (...args: unknown[]) => unknown, data, translate)
        : guardGroup(member as object, translate);
  }
  const close = guarded.close as () => Promise<void>;
  return {
    ...(guarded as unknown as Omit<Store, "health" | "integrity" | "close">),
    health: () => health,
    integrity() {
      check.ref();
      return integrity;
    },
    async close() {
      closed = true;
      check.stop();
      await close();
    },
  };
}

function guardGroup(group: object, translate: (err: unknown) => unknown): object {
  const out: Record<string, unknown> = {};
  for (const [name, member] of Object.entries(group)) {
    out[name] =
      typeof member === "function"
        ? guardCall(member as (...args: unknown[]) => unknown, group, translate)
        : member;
  }
  return out;
}

/** The call runs at once, as it always did; its result (or its translated error) comes as a promise. */
function guardCall(fn: (...args: unknown[]) => unknown, self: object, translate: (err: unknown) => unknown) {
  return (...args: unknown[]): Promise<unknown> => {
    try {
      return Promise.resolve(fn.apply(self, args));
    } catch (err) {
      return Promise.reject(translate(err));
    }
  };
}
