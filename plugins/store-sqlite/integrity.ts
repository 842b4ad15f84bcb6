/**
 * The integrity check a store runs when it opens. `PRAGMA quick_check` reads every page, which takes
 * seconds on a large database, so it runs in a worker thread on a second, read-only connection, and
 * opening the store never waits for it. It checks once per open: the worker gets its own copy of the
 * key, by transfer, and zeroizes it as soon as SQLite has it, so no key stays behind for a later run.
 */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import type Database from "better-sqlite3-multiple-ciphers";

export type IntegrityOutcome =
  | { status: "ok" }
  | { status: "corrupt"; reason: string }
  | { status: "unchecked"; reason: string };

/** At most this many problems are listed: the first says enough, the rest would only cost time. */
const MAX_PROBLEMS = 10;

/**
 * SQLITE_CORRUPT and its extended codes, and SQLITE_NOTADB: once the key has been proven on the file
 * (as it is before any call or check), "not a database" means a page failed its HMAC.
 */
export function isCorruptionCode(code: unknown): boolean {
  return typeof code === "string" && (code.startsWith("SQLITE_CORRUPT") || code === "SQLITE_NOTADB");
}

/** The SQLite error code of `err` (`SQLITE_CORRUPT` …), if it has one. */
export function sqliteCode(err: unknown): string | undefined {
  const code = typeof err === "object" && err !== null ? (err as { code?: unknown }).code : undefined;
  return typeof code === "string" && code.startsWith("SQLITE_") ? code : undefined;
}

/**
 * Runs quick_check on an open, keyed connection: ok, or corrupt with the first problems found. A
 * damaged page often stops the check with an error instead of a row; that is corrupt too. Any other
 * error is thrown: it says nothing about the file.
 */
export function quickCheck(db: Database.Database): IntegrityOutcome {
  let rows: string[];
  try {
    rows = db.prepare<[], string>(`PRAGMA quick_check(${MAX_PROBLEMS})`).pluck().all();
  } catch (err) {
    if (isCorruptionCode(sqliteCode(err))) return { status: "corrupt", reason: messageOf(err) };
    throw err;
  }
  if (rows.length === 1 && rows[0] === "ok") return { status: "ok" };
  return { status: "corrupt", reason: rows.join("; ") };
}

export interface RunningCheck {
  /** Settles once: with the worker's answer, or `unchecked` when it could not give one. Never rejects. */
  readonly outcome: Promise<IntegrityOutcome>;
  /** Someone waits for the outcome: keep the process alive until it is there. */
  ref(): void;
  /**
   * The store is closing: end the worker (its answer no longer matters). Its JavaScript stops at once;
   * a quick_check already inside SQLite finishes its pass first (about 4 s per GB here, 0.5 s for
   * 120 MB), so that is the longest a shutdown during the check waits for the process to exit.
   */
  stop(): void;
}

/** The compiled worker beside this module. Running from TypeScript sources (vitest) it is absent. */
const WORKER_URL = new URL("./integrity-worker.js", import.meta.url);

/**
 * Starts the check of `dbPath` in a worker thread. `keyLiteral` is transferred, not copied: after the
 * call this thread holds no copy (the buffer is detached, or zeroized when no worker could start).
 * The worker is unref'd, so it never keeps the process alive, and a shutdown simply ends it.
 */
export function startIntegrityCheck(
  dbPath: string,
  keyLiteral: Buffer,
  workerUrl = WORKER_URL,
): RunningCheck {
  const workerPath = fileURLToPath(workerUrl);
  if (!existsSync(workerPath)) {
    keyLiteral.fill(0);
    return settled({ status: "unchecked", reason: `${workerPath} is missing (build with: npm run build)` });
  }
  const key = transferable(keyLiteral);
  let worker: Worker;
  try {
    worker = new Worker(workerUrl, {
      workerData: { dbPath, key },
      transferList: [key.buffer as ArrayBuffer],
    });
  } catch (err) {
    key.fill(0);
    return settled({ status: "unchecked", reason: messageOf(err) });
  }
  worker.unref();
  let settle: (outcome: IntegrityOutcome) => void = () => undefined;
  const outcome = new Promise<IntegrityOutcome>((resolve) => {
    settle = resolve;
  });
  worker.once("message", (answer: IntegrityOutcome) => settle(answer));
  worker.once("error", (err) => settle({ status: "unchecked", reason: messageOf(err) }));
  worker.once("exit", (code) =>
    settle({ status: "unchecked", reason: `the check's thread ended (exit code ${code}) without an answer` }),
  );
  return {
    outcome,
    ref: () => worker.ref(),
    stop() {
      settle({ status: "unchecked", reason: "the store was closed before the check finished" });
      worker.terminate().catch(() => undefined);
    },
  };
}

function settled(outcome: IntegrityOutcome): RunningCheck {
  return { outcome: Promise.resolve(outcome), ref: () => undefined, stop: () => undefined };
}

/**
 * A buffer that owns its whole ArrayBuffer, so transferring it moves the key and nothing else. A
 * buffer sharing its memory (Buffer's pool) is copied into one first and wiped.
 */
function transferable(buffer: Buffer): Buffer {
  if (buffer.byteOffset === 0 && buffer.buffer.byteLength === buffer.length) return buffer;
  const own = Buffer.from(new ArrayBuffer(buffer.length));
  buffer.copy(own);
  buffer.fill(0);
  return own;
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
