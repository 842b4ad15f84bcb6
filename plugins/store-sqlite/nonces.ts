/** Signature nonces: a replay is refused until the nonce's signature could no longer be accepted. */
import type Database from "better-sqlite3-multiple-ciphers";
import type { StoreData } from "./sync-store.js";

export function createNonces(db: Database.Database): StoreData["nonces"] {
  const s = {
    forget: db.prepare<[number], void>("DELETE FROM nonces WHERE expires_at < ?"),
    claim: db.prepare<[string, string, number], void>(
      "INSERT OR IGNORE INTO nonces (key_id, nonce, expires_at) VALUES (?, ?, ?)",
    ),
  };
  return {
    claim(keyId, nonce, expiresAt, now) {
      s.forget.run(now);
      return s.claim.run(keyId, nonce, expiresAt).changes === 1;
    },
  };
}
