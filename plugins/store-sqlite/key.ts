/**
 * The database key: Argon2id(master secret, salt) → 32 raw bytes. The salt lives beside the DB in
 * `spar.db.salt`; without it the key cannot be derived again, so it is never silently recreated.
 */
import { randomBytes } from "node:crypto";
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, readSync, writeSync } from "node:fs";
import { type Algorithm, hashRaw } from "@node-rs/argon2";
import { SparError } from "../../sdk/index.js";

export const SALT_BYTES = 16;
export const KEY_BYTES = 32;

// `Algorithm` is an ambient const enum, which `verbatimModuleSyntax` forbids reading; 2 is its Argon2id.
const ARGON2ID = 2 as Algorithm;

/** DESIGN §5 asks for at least m=64 MiB, t=3, p=1. Changing any of these changes every key. */
const ARGON2_OPTIONS = {
  memoryCost: 65536,
  timeCost: 3,
  parallelism: 1,
  outputLen: KEY_BYTES,
  algorithm: ARGON2ID,
};

/**
 * Reads the salt of an existing database. A missing or malformed salt is a key problem, not a reason
 * to start over: the old database would become unreadable.
 */
export function readSalt(saltPath: string, dbPath: string): Buffer {
  if (!existsSync(saltPath)) {
    throw new SparError(
      "STORE_KEY_INVALID",
      `${dbPath} exists but its salt file ${saltPath} is missing, so its key cannot be derived. ` +
        "Restore the salt file from a backup, or start afresh with: spar init --fresh (it moves the database " +
        "aside, deleting nothing); Spar will not create a new database over the old one",
    );
  }
  const salt = readFileSync(saltPath);
  if (salt.length !== SALT_BYTES) {
    throw new SparError(
      "STORE_KEY_INVALID",
      `${saltPath} holds ${salt.length} bytes, expected ${SALT_BYTES}; restore it from a backup`,
    );
  }
  return salt;
}

/**
 * The salt for a database about to be created: reuses a salt left by an earlier attempt, else writes
 * a new one (mode 0600, fsynced) before the database exists, so a crash never leaves a DB without salt.
 */
export function readOrCreateSalt(saltPath: string, dbPath: string): Buffer {
  if (existsSync(saltPath)) return readSalt(saltPath, dbPath);
  const salt = randomBytes(SALT_BYTES);
  const fd = openSync(saltPath, "wx", 0o600);
  try {
    writeSync(fd, salt);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  return salt;
}

/** Derives the 32-byte database key. Runs on the libuv pool (~300 ms); the caller zeroizes the result. */
export async function deriveKey(masterSecret: Buffer, salt: Buffer): Promise<Buffer> {
  return hashRaw(masterSecret, { ...ARGON2_OPTIONS, salt });
}

const HEX = "0123456789abcdef";

/**
 * The raw-key literal `x'<64 hex>'` SQLite3MC accepts as a key, built in a Buffer rather than a string
 * so it can be zeroized too (a JS string cannot be). A raw key skips the cipher's own KDF: opening
 * takes under a millisecond instead of ~240 ms for a passphrase. With `cipherSalt` it is
 * `x'<64 hex key><32 hex salt>'`: the SQLCipher scheme then uses that salt instead of a new random
 * one (a rekey gives a database a new salt unless it is told one; see rekey.ts).
 */
export function rawKeyLiteral(key: Buffer, cipherSalt?: Buffer): Buffer {
  const bytes = cipherSalt ? Buffer.concat([key, cipherSalt]) : key;
  const out = Buffer.alloc(3 + bytes.length * 2);
  out.write("x'", 0, "latin1");
  bytes.forEach((byte, i) => {
    out[2 + i * 2] = HEX.charCodeAt(byte >> 4);
    out[3 + i * 2] = HEX.charCodeAt(byte & 15);
  });
  if (bytes !== key) bytes.fill(0);
  out[out.length - 1] = "'".charCodeAt(0);
  return out;
}

/** The SQLCipher scheme's salt: the database file's first 16 bytes, which it keeps in plaintext. */
export function readCipherSalt(dbPath: string): Buffer {
  const salt = Buffer.alloc(16);
  const fd = openSync(dbPath, "r");
  try {
    if (readSync(fd, salt, 0, 16, 0) !== 16) throw new Error(`${dbPath} is shorter than its cipher salt`);
  } finally {
    closeSync(fd);
  }
  return salt;
}
