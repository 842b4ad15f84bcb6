/**
 * The integrity check's thread (see integrity.ts): a read-only connection, keyed with the literal it
 * was handed by transfer and zeroizes at once, then `PRAGMA quick_check`, and one message back. Like
 * every connection here it is retained (retain.ts): a collected one aborts Node 24.
 */
import { parentPort, workerData } from "node:worker_threads";
import { keyConnection } from "./cipher.js";
import { type IntegrityOutcome, quickCheck } from "./integrity.js";
import { openRetained } from "./retain.js";

const { dbPath, key } = workerData as { dbPath: string; key: Uint8Array };
// A view of the transferred memory, not a copy: zeroizing it wipes the only key in this thread.
const literal = Buffer.from(key.buffer, key.byteOffset, key.byteLength);

function check(): IntegrityOutcome {
  try {
    const db = openRetained(dbPath, { readonly: true, fileMustExist: true });
    try {
      keyConnection(db, literal);
      literal.fill(0);
      return quickCheck(db);
    } finally {
      db.close();
    }
  } catch (err) {
    return { status: "unchecked", reason: err instanceof Error ? err.message : String(err) };
  } finally {
    literal.fill(0);
  }
}

parentPort?.postMessage(check());
