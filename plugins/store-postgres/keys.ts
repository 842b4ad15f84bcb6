/**
 * The store key: Argon2id(master secret, salt), the salt a random row of spar_meta made on first
 * open. Beside it, the key check (the key's encryption of a fixed text) proves a master secret
 * right before anything is read or written: a wrong one is STORE_KEY_INVALID at open, never a
 * silent garbage read. Both rows are written with ON CONFLICT DO NOTHING and read back, so daemons
 * opening a new database at once agree on one salt.
 */
import { SparError } from "../../sdk/index.js";
import {
  type Cipher,
  createCipher,
  deriveKey,
  KEY_CHECK_COLUMN,
  KEY_CHECK_TEXT,
  keyMatches,
  newSalt,
} from "./cipher.js";
import type { Db } from "./connection.js";

export const SALT_ROW = "kdf_salt";
export const CHECK_ROW = "key_check";

async function readOrCreate(db: Db, key: string, value: () => Buffer): Promise<Buffer> {
  await db.query("INSERT INTO spar_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING", [
    key,
    value(),
  ]);
  const row = (await db.query<{ value: Buffer }>("SELECT value FROM spar_meta WHERE key = $1", [key]))
    .rows[0];
  if (!row) throw new SparError("STORE_FAILED", `spar_meta lost its ${key} row while the store opened`);
  return row.value;
}

/**
 * The cipher for `masterSecret`, the salt and key check created on first open. STORE_KEY_INVALID
 * when the secret is not the one the database was created with.
 */
export async function openCipher(db: Db, masterSecret: Buffer, schema: string): Promise<Cipher> {
  const salt = await readOrCreate(db, SALT_ROW, newSalt);
  const key = await deriveKey(masterSecret, salt);
  const cipher = createCipher(key);
  key.fill(0);
  const check = await readOrCreate(db, CHECK_ROW, () => cipher.seal(KEY_CHECK_COLUMN, KEY_CHECK_TEXT));
  if (keyMatches(cipher, check)) return cipher;
  cipher.wipe();
  throw new SparError(
    "STORE_KEY_INVALID",
    `cannot decrypt the PostgreSQL schema ${schema}: the master secret does not match the one it was created ` +
      "with. Either master.key is not the original, or SPAR_MASTER_KEY is set to a different value (it takes " +
      "precedence over master.key). Nothing was changed. To recover: restore the original secret, or point " +
      "[store.postgres] schema at a new schema to start afresh",
  );
}
