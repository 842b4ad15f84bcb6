/**
 * A damaged database, found by any call or by the integrity check at open, becomes one catalog
 * error: STORE_CORRUPT (503), naming the file and how to recover. The store remembers it, so its
 * health says so until the daemon restarts. Translated in one place: every Store method is wrapped
 * once, here, instead of a try/catch at each call site. The same wrapper holds back a call that
 * wrote until its commit is on disk (durability.ts).
 */
import { basename } from "node:path";
import type { Logger, Store, StoreCheck, StoreHealth } from "../../kernel/sdk.js";
import { SparError } from "../../kernel/sdk.js";
import { createWriteBatch, type GroupSync } from "./durability.js";
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
  /** How writes reach the disk: a call that changed rows resolves once that change is durable. */
  durability: {
    sync: GroupSync;
    /** The connection, for the batched transactions writes share (see createWriteBatch). */
    db: Parameters<typeof createWriteBatch>[0];
    /** Rows changed on the connection so far (SQLite's `total_changes()`). */
    changes(): number;
    /** Methods ("group.method") that only read: they run at once, outside any batch they find none of. */
    reads: ReadonlySet<string>;
    /** Methods that resolve once committed, without waiting for the disk: `durable()` covers them. */
    deferred: ReadonlySet<string>;
  };
}

/**
 * Turns the synchronous data layer into the kernel's asynchronous Store: every method of `data` is
 * wrapped once, so it returns a promise, resolved once what it wrote is on disk (but for the
 * deferred ones), and a corruption error becomes STORE_CORRUPT and marks the store corrupt (logged
 * once, naming the file); and adds `health()`, `integrity()` and `durable()`.
 */
export function guardStore(data: StoreData, options: GuardOptions): Store {
  const { dbPath, log, check, durability } = options;
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

  const { sync, changes, reads, deferred } = durability;
  const batch = createWriteBatch(durability.db, { committed: () => sync.wrote(), translate });
  const wrap = (name: string, fn: (...args: unknown[]) => unknown, self: object) => {
    const read = reads.has(name);
    const waits = !deferred.has(name);
    return (...args: unknown[]): Promise<unknown> => {
      try {
        const before = changes();
        const result = read ? fn.apply(self, args) : batch.run(() => fn.apply(self, args));
        // Checked for reads too: a method that wrote is held back like any write.
        if (changes() === before) return Promise.resolve(result);
        if (!batch.open) sync.wrote(); // committed on its own, outside a batch
        const committed = batch.committed();
        return (waits ? committed.then(() => sync.durable()) : committed).then(() => result);
      } catch (err) {
        return Promise.reject(translate(err));
      }
    };
  };

  // Groups nest (`gorillas.runs.begin`): each method is named by its whole path, as `reads` lists it.
  const guard = (members: object, prefix: string): Record<string, unknown> => {
    const group: Record<string, unknown> = {};
    for (const [key, member] of Object.entries(members)) {
      const name = prefix === "" ? key : `${prefix}.${key}`;
      if (typeof member === "function") {
        group[key] = wrap(name, member as (...args: unknown[]) => unknown, members);
      } else {
        group[key] = typeof member === "object" && member !== null ? guard(member, name) : member;
      }
    }
    return group;
  };
  const { close: _close, ...methods } = data;
  const guarded = guard(methods, "");
  return {
    ...(guarded as unknown as Omit<Store, "health" | "integrity" | "durable" | "close">),
    health: () => health,
    integrity() {
      check.ref();
      return integrity;
    },
    durable: () => batch.committed().then(() => sync.durable()),
    async close() {
      closed = true;
      check.stop();
      batch.end();
      // Everything committed is flushed before the file is let go.
      await sync.durable().catch(() => undefined);
      await sync.close();
      data.close();
    },
  };
}
