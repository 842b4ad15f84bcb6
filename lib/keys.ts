import { createHash, createPrivateKey, createPublicKey, type KeyObject } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { SparError } from "../sdk/errors.js";
import type { AuthorizedKey, KeyScope } from "../sdk/services.js";

/**
 * Request-signing keys. Authorized public keys are files `<data dir>/keys/authorized/<name>.pub`
 * (PEM SPKI, 0600); a signature's `keyid` is the file's name. The CLI's own pair is `keys/cli.key`
 * and `keys/cli.pub`, authorized as `cli` by `spar init`. A key's scope is `<name>.scope` beside it
 * (JSON, 0600); a key without one is `admin`, which is what every key was before scopes existed, so
 * keys authorized then keep working as they did.
 */
export const CLI_KEY_ID = "cli";
const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

export function authorizedDir(home: string): string {
  return join(home, "keys", "authorized");
}

/** Reads an Ed25519 public key given as PEM SPKI, or as base64/base64url of the raw 32 bytes. */
export function parsePublicKey(text: string): KeyObject {
  const trimmed = text.trim();
  let key: KeyObject;
  try {
    if (trimmed.startsWith("-----BEGIN")) {
      key = createPublicKey(trimmed);
    } else {
      const raw = Buffer.from(trimmed.replace(/-/g, "+").replace(/_/g, "/"), "base64");
      if (raw.length !== 32) throw new Error(`expected 32 bytes, got ${raw.length}`);
      key = createPublicKey({
        key: { kty: "OKP", crv: "Ed25519", x: raw.toString("base64url") },
        format: "jwk",
      });
    }
  } catch (err) {
    throw new SparError(
      "VALIDATION_FAILED",
      `not an Ed25519 public key (PEM SPKI, or base64/base64url of the raw 32 bytes): ${(err as Error).message}`,
    );
  }
  if (key.asymmetricKeyType !== "ed25519") {
    throw new SparError("VALIDATION_FAILED", `the key is ${key.asymmetricKeyType}, not ed25519`);
  }
  return key;
}

/** A short, stable way to tell keys apart in listings: sha256 of the raw key, base64url, 16 chars. */
export function fingerprint(key: KeyObject): string {
  const raw = Buffer.from(key.export({ format: "jwk" }).x ?? "", "base64url");
  return `SHA256:${createHash("sha256").update(raw).digest("base64url").slice(0, 16)}`;
}

const SCOPE_SYNTAX = "admin, operator, read or chat:<fighter>[,<fighter>…]";
const ADMIN: KeyScope = { kind: "admin" };

/** Reads a scope as the CLI takes it: `admin`, `operator`, `read` or `chat:<fighter>[,<fighter>…]`. */
export function parseScope(text: string): KeyScope {
  const trimmed = text.trim();
  if (trimmed === "admin" || trimmed === "operator" || trimmed === "read") return { kind: trimmed };
  if (trimmed.startsWith("chat:")) {
    const fighters = trimmed
      .slice(5)
      .split(",")
      .map((f) => f.trim());
    if (fighters.length > 0 && fighters.every((f) => f !== "" && f.length <= 200)) {
      return { kind: "chat", fighters: [...new Set(fighters)] };
    }
    throw new SparError(
      "VALIDATION_FAILED",
      `scope "${trimmed}" names no fighter: chat:<fighter>[,<fighter>…], each a fighter's name or id`,
    );
  }
  throw new SparError("VALIDATION_FAILED", `unknown scope "${trimmed}": use ${SCOPE_SYNTAX}`);
}

/** A scope as the CLI shows it and `parseScope` reads it back. */
export function formatScope(scope: KeyScope): string {
  return scope.kind === "chat" ? `chat:${scope.fighters.join(",")}` : scope.kind;
}

function scopePath(home: string, name: string): string {
  return join(authorizedDir(home), `${name}.scope`);
}

/** A key's scope from its file: admin when it has none; undefined when the file is not a scope. */
function readScope(home: string, name: string): KeyScope | undefined {
  const path = scopePath(home, name);
  if (!existsSync(path)) return ADMIN;
  try {
    const value = JSON.parse(readFileSync(path, "utf8")) as { scope?: unknown; fighters?: unknown };
    const fighters = Array.isArray(value.fighters) ? value.fighters.join(",") : "";
    return parseScope(value.scope === "chat" ? `chat:${fighters}` : String(value.scope));
  } catch {
    return undefined;
  }
}

/**
 * Writes a key's scope by renaming a finished file into place: the daemon reads the folder again
 * when its entries change, and never sees half a file.
 */
function writeScope(home: string, name: string, scope: KeyScope): void {
  const path = scopePath(home, name);
  const temporary = `${path}.${process.pid}.tmp`;
  const body = scope.kind === "chat" ? { scope: "chat", fighters: scope.fighters } : { scope: scope.kind };
  writeFileSync(temporary, `${JSON.stringify(body)}\n`, { mode: 0o600 });
  renameSync(temporary, path);
}

export function addKey(
  home: string,
  name: string,
  text: string,
  scope: KeyScope = ADMIN,
): { name: string; fingerprint: string; scope: string } {
  if (!NAME.test(name)) {
    throw new SparError(
      "VALIDATION_FAILED",
      `key name "${name}" must be 1-64 letters, digits, "_", "." or "-"`,
    );
  }
  const key = parsePublicKey(text);
  const dir = authorizedDir(home);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, `${name}.pub`);
  if (existsSync(path))
    throw new SparError("CONFLICT", `a key named "${name}" is already authorized; remove it first`);
  // One key, one name: the name is who signed (rate limits, logs), and removing one name must revoke it.
  const holder = nameOfKey(home, key);
  if (holder !== undefined) {
    throw new SparError(
      "CONFLICT",
      `this public key is already authorized as "${holder}"; to give it another name, remove "${holder}" first`,
    );
  }
  // The scope first: a key the daemon can see is never, even for a moment, broader than asked.
  writeScope(home, name, scope);
  writeFileSync(path, key.export({ type: "spki", format: "pem" }).toString(), { mode: 0o600, flag: "wx" });
  return { name, fingerprint: fingerprint(key), scope: formatScope(scope) };
}

/** Changes an authorized key's scope; the running daemon applies it from its next request. */
export function setScope(home: string, name: string, scope: KeyScope): { name: string; scope: string } {
  if (!NAME.test(name) || !existsSync(join(authorizedDir(home), `${name}.pub`)))
    throw new SparError("NOT_FOUND", `no authorized key named "${name}"`);
  writeScope(home, name, scope);
  return { name, scope: formatScope(scope) };
}

export function listKeys(home: string): { name: string; fingerprint: string; scope: string }[] {
  const dir = authorizedDir(home);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith(".pub"))
    .map((f) => f.slice(0, -4))
    .sort()
    .map((name) => `${name}.pub`)
    .map((f) => {
      const scope = readScope(home, f.slice(0, -4));
      return {
        name: f.slice(0, -4),
        fingerprint: fingerprint(parsePublicKey(readFileSync(join(dir, f), "utf8"))),
        // A damaged scope file authorizes nothing (the daemon skips the key), and the listing says so.
        scope: scope ? formatScope(scope) : "invalid (the key is refused; set it with spar key scope)",
      };
    });
}

/** The name an authorized public key is filed under, if any (unreadable key files are skipped). */
export function nameOfKey(home: string, key: KeyObject): string | undefined {
  const dir = authorizedDir(home);
  if (!existsSync(dir)) return undefined;
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".pub"))) {
    try {
      if (parsePublicKey(readFileSync(join(dir, file), "utf8")).equals(key)) return file.slice(0, -4);
    } catch {
      // A broken file authorizes nothing, so it holds no key either.
    }
  }
  return undefined;
}

/** The CLI's public key, the file that `spar key add cli <file>` takes to authorize it again. */
export function cliPublicKeyPath(home: string): string {
  return join(home, "keys", `${CLI_KEY_ID}.pub`);
}

export function removeKey(home: string, name: string): void {
  const path = join(authorizedDir(home), `${name}.pub`);
  if (!NAME.test(name) || !existsSync(path))
    throw new SparError("NOT_FOUND", `no authorized key named "${name}"`);
  // The key first, so a key the daemon can see always has the scope it was given.
  rmSync(path);
  rmSync(scopePath(home, name), { force: true });
}

export function loadCliKey(home: string): KeyObject | undefined {
  const path = join(home, "keys", "cli.key");
  return existsSync(path) ? createPrivateKey(readFileSync(path, "utf8")) : undefined;
}

/**
 * The daemon's view of the authorized keys. `spar key add/remove` edit the directory while the
 * daemon runs, so it is read again whenever its modification time changes (one stat per request).
 */
export function createKeyRing(home: string) {
  const dir = authorizedDir(home);
  let seen = -1;
  let keys = new Map<string, AuthorizedKey>();
  const refresh = () => {
    const mtime = existsSync(dir) ? statSync(dir).mtimeMs : 0;
    if (mtime === seen) return;
    seen = mtime;
    const next = new Map<string, AuthorizedKey>();
    for (const file of existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith(".pub")) : []) {
      const scope = readScope(home, file.slice(0, -4));
      try {
        const publicKey = parsePublicKey(readFileSync(join(dir, file), "utf8"));
        if (scope) next.set(file.slice(0, -4), { publicKey, scope });
      } catch {
        // A hand-edited, broken key or scope file authorizes nothing; `spar key list` reports it.
      }
    }
    keys = next;
  };
  return {
    get(keyId: string): AuthorizedKey | undefined {
      refresh();
      return keys.get(keyId);
    },
    size(): number {
      refresh();
      return keys.size;
    },
  };
}
