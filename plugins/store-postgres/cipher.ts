/**
 * Encryption in the application: PostgreSQL only ever sees ciphertext for what users and models
 * wrote. Each value is AES-256-GCM under the store key with a fresh 96-bit nonce, stored as
 * nonce ‖ ciphertext ‖ tag, and bound to its table and column by the AAD, so a value copied into
 * another column does not decrypt. Lookups that need equality (a fighter's name, an Idempotency-Key)
 * use an HMAC-SHA256 of the text under a second key, derived from the first.
 */
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from "node:crypto";
import { type Algorithm, hashRaw } from "@node-rs/argon2";
import { SparError } from "../../sdk/index.js";

export const SALT_BYTES = 16;
export const KEY_BYTES = 32;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

// `Algorithm` is an ambient const enum, which `verbatimModuleSyntax` forbids reading; 2 is its Argon2id.
const ARGON2ID = 2 as Algorithm;

/** The same parameters as store-sqlite (DESIGN §5: at least m=64 MiB, t=3, p=1). */
const ARGON2_OPTIONS = {
  memoryCost: 65536,
  timeCost: 3,
  parallelism: 1,
  outputLen: KEY_BYTES,
  algorithm: ARGON2ID,
};

/** Derives the 32-byte store key from the master secret and the database's salt (~300 ms, libuv pool). */
export async function deriveKey(masterSecret: Buffer, salt: Buffer): Promise<Buffer> {
  return hashRaw(masterSecret, { ...ARGON2_OPTIONS, salt });
}

/** Seals and opens values under one key. The key stays in memory for the store's life; `wipe` zeroizes it. */
export interface Cipher {
  /** `text` encrypted for `column` ("table.column"). */
  seal(column: string, text: string): Buffer;
  /** The text sealed for `column`; STORE_KEY_INVALID when it was not (wrong key, damaged or moved value). */
  open(column: string, sealed: Buffer): string;
  /** A keyed digest of `text` for `purpose`: equal texts, equal digests; nothing else is learned. */
  mac(purpose: string, text: string): Buffer;
  wipe(): void;
}

/** A Cipher over a copy of `key` (the caller zeroizes its own). */
export function createCipher(key: Buffer): Cipher {
  const encKey = Buffer.from(key);
  const macKey = Buffer.from(
    hkdfSync("sha256", encKey, Buffer.alloc(0), "spar store-postgres mac", KEY_BYTES),
  );
  return {
    seal(column, text) {
      const nonce = randomBytes(NONCE_BYTES);
      const cipher = createCipheriv("aes-256-gcm", encKey, nonce);
      cipher.setAAD(Buffer.from(column, "utf8"));
      const body = Buffer.concat([cipher.update(text, "utf8"), cipher.final()]);
      return Buffer.concat([nonce, body, cipher.getAuthTag()]);
    },
    open(column, sealed) {
      try {
        if (sealed.length < NONCE_BYTES + TAG_BYTES) throw new Error("too short");
        const decipher = createDecipheriv("aes-256-gcm", encKey, sealed.subarray(0, NONCE_BYTES));
        decipher.setAAD(Buffer.from(column, "utf8"));
        decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
        const body = sealed.subarray(NONCE_BYTES, sealed.length - TAG_BYTES);
        return Buffer.concat([decipher.update(body), decipher.final()]).toString("utf8");
      } catch {
        throw new SparError(
          "STORE_KEY_INVALID",
          `a value of ${column} does not decrypt with this store's key: it was written under another key, or damaged`,
        );
      }
    },
    mac(purpose, text) {
      return createHmac("sha256", macKey).update(`${purpose}\0${text}`, "utf8").digest();
    },
    wipe() {
      encKey.fill(0);
      macKey.fill(0);
    },
  };
}

/** The fixed text whose encryption, kept in spar_meta, proves a key right at open. */
export const KEY_CHECK_TEXT = "spar store-postgres key check v1";
export const KEY_CHECK_COLUMN = "spar_meta.key_check";

/** Whether `cipher` opens the stored key check (false for a wrong master secret). */
export function keyMatches(cipher: Cipher, check: Buffer): boolean {
  try {
    return cipher.open(KEY_CHECK_COLUMN, check) === KEY_CHECK_TEXT;
  } catch {
    return false;
  }
}

/** A new random salt. */
export function newSalt(): Buffer {
  return randomBytes(SALT_BYTES);
}
