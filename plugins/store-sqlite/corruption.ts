/**
 * A damaged database, found by any call or by the integrity check at open, becomes one catalog
 * error: STORE_CORRUPT (503), naming the file and how to recover. The store remembers it, so its
 * health says so until the daemon restarts. Translated in one place: every Store method is wrapped
 * once, here, instead of a try/catch at each call site. The same wrapper holds back a call that
 * wrote until its commit is on disk (durability.ts), and turns a full disk into STORAGE_FULL
 * (storage-full.ts), which is no damage.
 */
import { basename, dirname } from "node:path";
import type { Logger, Store, StoreCheck, StoreHealth } from "../../sdk/index.js";
import { observe, observing, SparError } from "../../sdk/index.js";
import type { CollectionRows } from "./collections.js";
import { createWriteBatch, type GroupSync } from "./durability.js";
import { type IntegrityOutcome, isCorruptionCode, type RunningCheck, sqliteCode } from "./integrity.js";
import type { RefusedTurns } from "./refused-turns.js";
import { isStorageFull, storageFullError } from "./storage-full.js";
import type { StoreData } from "./sync-store.js";

const COMMIT = { kind: "store_commit", store: "sqlite" } as const;
const commitEnd = (_result: unknown, error: unknown) => ({ outcome: error ? "error" : "ok" });

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

/** A turn's own steps and end: a full disk refusing one leaves the turn to settle (refused-turns.ts). */
const TURN_STEPS: ReadonlySet<string> = new Set(["turns.append", "turns.finish"]);
/** For a store whose turns are settled elsewhere (or tests of the guard alone). */
const NO_REFUSED_TURNS: RefusedTurns = {
  refuse: () => undefined,
  has: () => false,
  pending: 0,
  settle: () => false,
};
/** How often a turn a full disk refused is tried again while nothing else writes. */
const SETTLE_RETRY_MS = 250;

export interface GuardOptions {
  dbPath: string;
  log: Logger;
  /** The integrity check started at open; its outcome marks the store as soon as it arrives. */
  check: RunningCheck;
  /** Turns a full disk left running, settled once the disk takes writes again (refused-turns.ts). */
  refused?: RefusedTurns;
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
 * once, naming the file), a full disk STORAGE_FULL (which marks nothing: see refused-turns.ts for the
 * turns it cuts short); and adds `health()`, `integrity()` and `durable()`.
 */
/** The Store, but for its collections, and the guarded rows store.ts makes them of. */
export type GuardedStore = Omit<Store, "collections"> & { collectionRows: CollectionRows };

export function guardStore(data: StoreData, options: GuardOptions): GuardedStore {
  const { dbPath, log, check, durability, refused = NO_REFUSED_TURNS } = options;
  let health: StoreHealth = { status: "ok" };
  let closed = false;

  const markCorrupt = (reason: string): void => {
    if (health.status === "corrupt") return;
    const detail = corruptionDetail(dbPath, reason);
    health = { status: "corrupt", detail };
    log.error(detail);
  };
  const translate = (err: unknown): unknown => {
    // A full disk is no damage: the write was rolled back, and the store stays healthy.
    if (isStorageFull(err)) return storageFullError(dirname(dbPath), "this write was rolled back", err);
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
  // Outside any batch, so a settled turn is committed on its own (it must not share a batch's fate).
  let retry: NodeJS.Timeout | undefined;
  const settleRefused = (): void => {
    if (closed || refused.pending === 0) return;
    if (!batch.open && refused.settle()) sync.wrote();
    if (refused.pending > 0 && !retry) {
      retry = setTimeout(() => {
        retry = undefined;
        settleRefused();
      }, SETTLE_RETRY_MS);
      retry.unref();
    }
  };
  const wrap = (name: string, fn: (...args: unknown[]) => unknown, self: object) => {
    const read = reads.has(name);
    const waits = !deferred.has(name);
    const turnId = (args: unknown[]) => (TURN_STEPS.has(name) ? String(args[0]) : undefined);
    const noteFull = (id: string | undefined, err: unknown): unknown => {
      if (id && isStorageFull(err)) {
        refused.refuse(id);
        settleRefused();
      }
      return err;
    };
    return (...args: unknown[]): Promise<unknown> => {
      const turn = turnId(args);
      // The kernel ending a turn the disk refused (as failed): it is settled here instead.
      if (turn && refused.has(turn)) return Promise.resolve(settleRefused());
      if (!read && !batch.open) settleRefused();
      try {
        const before = changes();
        const result = read ? fn.apply(self, args) : batch.run(() => fn.apply(self, args));
        // Checked for reads too: a method that wrote is held back like any write.
        if (changes() === before) return Promise.resolve(result);
        if (!batch.open) sync.wrote(); // committed on its own, outside a batch
        const committed = batch.committed();
        const done = (waits ? committed.then(() => sync.durable()) : committed).then(() => result);
        return turn
          ? done.catch((err: unknown) => {
              throw noteFull(turn, err);
            })
          : done;
      } catch (err) {
        return Promise.reject(noteFull(turn, translate(err)));
      }
    };
  };

  // Groups nest (`troops.tasks.save`): each method is named by its whole path, as `reads` lists it.
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
    ...(guarded as unknown as Omit<GuardedStore, "health" | "integrity" | "durable" | "close">),
    health: () => health,
    integrity() {
      check.ref();
      return integrity;
    },
    // Making a turn's writes durable is the store's measured point (README "Metrics and traces").
    durable: () =>
      observing()
        ? observe(COMMIT, () => batch.committed().then(() => sync.durable()), commitEnd)
        : batch.committed().then(() => sync.durable()),
    async close() {
      closed = true;
      if (retry) clearTimeout(retry);
      check.stop();
      batch.end();
      // Everything committed is flushed before the file is let go.
      await sync.durable().catch(() => undefined);
      await sync.close();
      data.close();
    },
  };
}
