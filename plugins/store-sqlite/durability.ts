/**
 * Group commit. The connection commits with `synchronous = NORMAL`: a commit writes its WAL frames
 * and returns without waiting for the disk. Durability comes from here: an fdatasync of the WAL file
 * on the thread pool, so the event loop keeps serving while the disk works, and shared, so every
 * commit made before a flush starts is made durable by that one flush. WAL frames are appended in
 * order, so a flush covers every earlier commit; SQLite's own checkpoints sync the WAL before copying
 * it into the database and sync the database after, so nothing a flush covered is lost when the WAL
 * is reused. Together that is what `synchronous = FULL` promises (each commit durable before it is
 * acknowledged), at one flush per batch instead of one per commit, none of them on the main thread.
 */
import { open } from "node:fs/promises";
import { dirname } from "node:path";
import { SparError } from "../../sdk/index.js";
import { isStorageFull, storageFullError } from "./storage-full.js";

export interface GroupSync {
  /** Counts a commit that must reach the disk before anyone waiting on `durable()` after it. */
  wrote(): void;
  /** Resolves once every commit counted before the call is on disk; rejects if the flush failed. */
  durable(): Promise<void>;
  /** Waits for a flush in progress, then releases the file. */
  close(): Promise<void>;
}

/** What a group sync flushes: the WAL file (openWalFlush), or a counter in tests. */
export interface Flusher {
  flush(): Promise<void>;
  close(): Promise<void>;
}

interface Waiter {
  upTo: number;
  resolve(): void;
  reject(err: unknown): void;
}

/**
 * Batches flushes: while one runs, later callers wait for the next, which covers all of them. A
 * failed flush fails every caller it was for, and the next caller tries again (the disk may have
 * recovered; a commit it could not flush was never acknowledged).
 */
export function createGroupSync(target: Flusher): GroupSync {
  let written = 0;
  let flushed = 0;
  let running: Promise<void> | undefined;
  let waiters: Waiter[] = [];

  const settle = (covered: (w: Waiter) => boolean, done: (w: Waiter) => void): void => {
    const now = waiters.filter(covered);
    waiters = waiters.filter((w) => !covered(w));
    for (const w of now) done(w);
  };

  async function drain(): Promise<void> {
    while (waiters.length > 0) {
      const upTo = written;
      try {
        await target.flush();
        flushed = Math.max(flushed, upTo);
        settle(
          (w) => w.upTo <= flushed,
          (w) => w.resolve(),
        );
      } catch (err) {
        settle(
          (w) => w.upTo <= upTo,
          (w) => w.reject(err),
        );
      }
    }
    running = undefined;
  }

  return {
    wrote() {
      written += 1;
    },
    durable() {
      if (flushed >= written) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        waiters.push({ upTo: written, resolve, reject });
        // Started a microtask later, so writes made in the same tick share the first flush too.
        running ??= Promise.resolve().then(drain);
      });
    },
    async close() {
      await running;
      await target.close();
    },
  };
}

/**
 * The flush for the database at `dbPath`: fdatasync of its `-wal` file, through a handle opened once
 * (the WAL keeps its inode while this connection is open), after one fsync of the directory, so the
 * WAL's own directory entry is durable too. Errors become STORE_FAILED, naming the file (STORAGE_FULL
 * for a full disk).
 */
export async function openWalFlush(dbPath: string): Promise<Flusher> {
  const walPath = `${dbPath}-wal`;
  const failed = (err: unknown) =>
    isStorageFull(err)
      ? storageFullError(
          dirname(dbPath),
          `${walPath} could not be flushed, so the last writes were not acknowledged`,
          err,
        )
      : new SparError(
          "STORE_FAILED",
          `could not flush ${walPath} to disk: ${err instanceof Error ? err.message : String(err)}`,
          {},
          { cause: err },
        );
  try {
    const dir = await open(dirname(dbPath), "r");
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
  } catch (err) {
    throw failed(err);
  }
  const wal = await open(walPath, "r").catch((err: unknown) => {
    throw failed(err);
  });
  return {
    flush: () =>
      wal.datasync().catch((err: unknown) => {
        throw failed(err);
      }),
    close: () => wal.close(),
  };
}

/**
 * Batched transactions. Committing costs far more than writing (each commit encrypts and appends
 * every page it touched, and pages like a table's last leaf are touched by every turn), so the
 * writes made in one turn of the event loop share one transaction: the first opens it (`BEGIN
 * IMMEDIATE`), each runs inside it at once and in call order (a write that is itself a transaction
 * becomes a savepoint, so its failure undoes only itself), and it commits when the loop moves on
 * (`setImmediate`). A write's promise waits for that commit. If the commit fails, or an error rolls
 * the whole transaction back, every write it held fails with that error.
 */
export interface WriteBatch {
  /** Runs `write` now, inside the open batch (opening one if none is). */
  run<T>(write: () => T): T;
  /** Whether a batch is open (a call made now runs inside it). */
  readonly open: boolean;
  /** Resolves once the open batch (if any) has committed; rejects with its failure. */
  committed(): Promise<void>;
  /** Commits the open batch now (the store is closing). */
  end(): void;
}

interface Batch {
  done: Promise<void>;
  resolve(): void;
  reject(err: unknown): void;
}

export function createWriteBatch(
  db: { prepare(sql: string): { run(): unknown }; readonly inTransaction: boolean },
  options: {
    /** Told after each commit, before its writers hear of it (the group sync counts it). */
    committed(): void;
    /** How a failure reaches the writers (corruption becomes STORE_CORRUPT). */
    translate(err: unknown): unknown;
  },
): WriteBatch {
  const begin = db.prepare("BEGIN IMMEDIATE");
  const commit = db.prepare("COMMIT");
  const rollback = db.prepare("ROLLBACK");
  let current: Batch | undefined;

  const fail = (batch: Batch, err: unknown) => {
    if (current === batch) current = undefined;
    batch.reject(options.translate(err));
  };

  function end(): void {
    const batch = current;
    current = undefined;
    if (!batch) return;
    try {
      if (db.inTransaction) commit.run();
      options.committed();
      batch.resolve();
    } catch (err) {
      try {
        if (db.inTransaction) rollback.run();
      } catch {
        // the connection already rolled back, or cannot: the commit's error is the one to report
      }
      fail(batch, err);
    }
  }

  return {
    run(write) {
      if (!current) {
        begin.run();
        let resolve: () => void = () => undefined;
        let reject: (err: unknown) => void = () => undefined;
        const done = new Promise<void>((ok, no) => {
          resolve = ok;
          reject = no;
        });
        // A batch whose writes changed nothing has nobody waiting on it; its failure is not unhandled.
        done.catch(() => undefined);
        current = { done, resolve, reject };
        setImmediate(end);
      }
      const batch = current;
      try {
        return write();
      } catch (err) {
        // Some errors (a full disk, I/O) roll back the whole transaction, not just this write.
        if (!db.inTransaction) fail(batch, err);
        throw err;
      }
    },
    get open() {
      return current !== undefined;
    },
    committed: () => current?.done ?? Promise.resolve(),
    end,
  };
}
