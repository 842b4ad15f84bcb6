/**
 * Damages a data dir's encrypted database as a failing disk would: one flipped byte in the page of a
 * chosen table, so the test knows which calls must meet it. Finding the page takes the key, derived
 * as the store derives it; the flip itself needs none (a page that fails its HMAC is damage enough).
 */
import { closeSync, existsSync, openSync, readFileSync, readSync, statSync, writeSync } from "node:fs";
import { join } from "node:path";
import { keyConnection } from "../../plugins/store-sqlite/cipher.js";
import { deriveKey, rawKeyLiteral } from "../../plugins/store-sqlite/key.js";
import { openRetained } from "../../plugins/store-sqlite/retain.js";

/**
 * Flips one byte in the root page of `table` in `<home>/spar.db` and returns the page number. The
 * store must be closed and its WAL checkpointed (a clean stop), or the page's newest copy would be
 * in `spar.db-wal` and the damage never read: that is refused here.
 */
export async function damageTablePage(home: string, table: string, masterSecret?: Buffer): Promise<number> {
  const dbPath = join(home, "spar.db");
  const secret = masterSecret ?? readFileSync(join(home, "master.key"));
  const key = await deriveKey(secret, readFileSync(join(home, "spar.db.salt")));
  const literal = rawKeyLiteral(key);
  key.fill(0);
  let page: number;
  let pageSize: number;
  const db = openRetained(dbPath, { readonly: true, fileMustExist: true });
  try {
    keyConnection(db, literal);
    page = db
      .prepare("SELECT rootpage FROM sqlite_master WHERE type = 'table' AND name = ?")
      .pluck()
      .get(table) as number;
    pageSize = db.prepare("PRAGMA page_size").pluck().get() as number;
  } finally {
    literal.fill(0);
    db.close();
  }
  const wal = `${dbPath}-wal`;
  if (existsSync(wal) && statSync(wal).size > 0)
    throw new Error(`${wal} still holds pages: stop the store cleanly`);
  const offset = (page - 1) * pageSize + 100; // past the page header, inside the encrypted content
  const fd = openSync(dbPath, "r+");
  try {
    const byte = Buffer.alloc(1);
    readSync(fd, byte, 0, 1, offset);
    byte[0] = (byte[0] ?? 0) ^ 0xff;
    writeSync(fd, byte, 0, 1, offset);
  } finally {
    closeSync(fd);
  }
  return page;
}
