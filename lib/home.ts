import {
  closeSync,
  existsSync,
  fsyncSync,
  linkSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { SparError } from "../sdk/errors.js";
import { type SecretStrength, secretStrength, secretWeakness } from "./secret-strength.js";

/** The data dir: `$SPAR_HOME`, else `~/.spar`. */
export function resolveHome(env = process.env): string {
  return env.SPAR_HOME ? resolve(env.SPAR_HOME) : join(homedir(), ".spar");
}

export const MASTER_KEY_FILE = "master.key";

/**
 * Parses `.env` text: `NAME=value` lines, `#` comments, optional `export `, single or double quotes.
 * Returns the pairs; nothing is written to the environment here.
 */
export function parseDotEnv(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const rawLine of text.split(/\r?\n/)) {
    const line = rawLine.trim();
    if (!line || line.startsWith("#")) continue;
    const match = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line);
    if (!match) continue;
    const [, name, rest = ""] = match;
    let value = rest.trim();
    const quote = value[0];
    if ((quote === '"' || quote === "'") && value.endsWith(quote) && value.length >= 2) {
      value = value.slice(1, -1);
      if (quote === '"') value = value.replace(/\\n/g, "\n").replace(/\\"/g, '"');
    } else {
      value = value.replace(/\s+#.*$/, "");
    }
    if (name) out[name] = value;
  }
  return out;
}

/**
 * The environment with `<home>/.env` beneath it: a new, frozen object holding `env`'s variables and,
 * for the names `env` does not set, `.env`'s. Nothing is written to `process.env`: the keys in .env
 * stay in this object, held by whoever asked for it (the daemon hands it to its plugins as
 * `PluginApi.env`), so no child process inherits them and the daemon's `/proc/<pid>/environ` never
 * shows them.
 *
 * @example
 * const env = withDotEnv(home);
 * const config = loadConfig(home, env);
 */
export function withDotEnv(home: string, env: NodeJS.ProcessEnv = process.env): Readonly<NodeJS.ProcessEnv> {
  const path = join(home, ".env");
  const merged: NodeJS.ProcessEnv = existsSync(path) ? parseDotEnv(readFileSync(path, "utf8")) : {};
  for (const [name, value] of Object.entries(env)) if (value !== undefined) merged[name] = value;
  return Object.freeze(merged);
}

/**
 * The master secret the store key is derived from: `SPAR_MASTER_KEY`, else `<home>/master.key`.
 * The caller owns the returned buffer and must zeroize it (`fill(0)`) once the key is derived.
 * A weak secret (see secretWeakness) is refused when it would create a new database; beside an
 * existing database, made with it by an older Spar, it is returned, since refusing would lock the
 * data away: the caller warns (inspectMasterSecret), and doctor and the audit fail on it.
 */
export function readMasterSecret(home: string, env = process.env): Buffer {
  const fromEnv = env.SPAR_MASTER_KEY;
  const path = join(home, MASTER_KEY_FILE);
  if (!fromEnv && !existsSync(path)) {
    throw new SparError("STORE_KEY_INVALID", `no master key: ${missingMasterKeyAdvice(home)}`);
  }
  if (!fromEnv && process.platform !== "win32" && (statSync(path).mode & 0o077) !== 0) {
    throw new SparError("STORE_KEY_INVALID", `${path} is readable by other users; run: chmod 600 ${path}`);
  }
  // Exactly these bytes, as read, are the key derivation's input: any other reading of them would
  // change every existing database's key.
  const secret = fromEnv ? Buffer.from(fromEnv, "utf8") : readFileSync(path);
  const weakness = secretWeakness(secretStrength(secret));
  if (weakness && !existsSync(join(home, DATABASE_FILE))) {
    secret.fill(0);
    throw new SparError(
      "STORE_KEY_INVALID",
      `refusing to create a database with a weak master secret: ${secretSource(home, env)} ${weakness}. ` +
        `Fix: ${weakSecretFix(home, { source: secretSource(home, env), database_exists: false })}`,
    );
  }
  return secret;
}

/**
 * What to do without a master secret. With no database yet, `spar init` writes one. Beside a
 * database, only the original secret opens it: restore it, or start afresh with `spar init --fresh`,
 * which moves the database aside (never deleting it) so that a new one can be made.
 */
export function missingMasterKeyAdvice(home: string): string {
  const path = join(home, MASTER_KEY_FILE);
  const missing = `${path} is missing and SPAR_MASTER_KEY is not set`;
  if (!existsSync(join(home, DATABASE_FILE))) return `${missing}; run: spar init (it writes a new one)`;
  return (
    `${missing}, and ${join(home, DATABASE_FILE)} opens only with the secret it was made with. ` +
    `Restore that secret (put the original ${MASTER_KEY_FILE} back in ${home} with mode 0600, or set ` +
    "SPAR_MASTER_KEY to it), or start afresh with: spar init --fresh (it moves the database aside as " +
    `${DATABASE_FILE}.unreadable-<time>, deleting nothing, and makes a new one)`
  );
}

/** The database the secret protects (the default store's file; `spar init` checks it as well). */
const DATABASE_FILE = "spar.db";

export interface MasterSecretFacts {
  /** `SPAR_MASTER_KEY` or the key file's path. */
  source: string;
  strength: SecretStrength;
  /** A database exists, made with this secret: changing the secret would lock its data away. */
  database_exists: boolean;
}

/**
 * The master secret's strength, for warnings, `spar doctor` and the audit: read as readMasterSecret
 * reads it (whatever the file's mode), counted, and zeroized. Undefined when there is none.
 */
export function inspectMasterSecret(home: string, env = process.env): MasterSecretFacts | undefined {
  const path = join(home, MASTER_KEY_FILE);
  let secret: Buffer;
  if (env.SPAR_MASTER_KEY) secret = Buffer.from(env.SPAR_MASTER_KEY, "utf8");
  else if (existsSync(path)) secret = readFileSync(path);
  else return undefined;
  try {
    return {
      source: secretSource(home, env),
      strength: secretStrength(secret),
      database_exists: existsSync(join(home, DATABASE_FILE)),
    };
  } finally {
    secret.fill(0);
  }
}

/**
 * What to do about a weak secret, as a clause to follow "fix:". With no database yet, replace it.
 * With one, the secret cannot simply change (the database opens only with the secret it was made
 * with): `spar rekey` writes a new random secret and re-encrypts the database under it.
 */
export function weakSecretFix(
  home: string,
  facts: Pick<MasterSecretFacts, "source" | "database_exists">,
): string {
  const replace =
    facts.source === "SPAR_MASTER_KEY"
      ? "set SPAR_MASTER_KEY to 32 random bytes (openssl rand -hex 32), or unset it and run spar init, which writes a random master.key"
      : `delete ${join(home, MASTER_KEY_FILE)} and run spar init, which writes 32 random bytes`;
  if (!facts.database_exists) return replace;
  const rekey =
    "stop the daemon (spar stop) and run spar rekey --yes, which writes a new random master.key and re-encrypts the database under it";
  return facts.source === "SPAR_MASTER_KEY"
    ? `write SPAR_MASTER_KEY's value to ${join(home, MASTER_KEY_FILE)} (mode 0600), unset SPAR_MASTER_KEY (and remove it from .env), then ${rekey}`
    : rekey;
}

function secretSource(home: string, env: NodeJS.ProcessEnv): string {
  return env.SPAR_MASTER_KEY ? "SPAR_MASTER_KEY" : join(home, MASTER_KEY_FILE);
}

/** `spar rekey` writes the new secret here first; it replaces master.key once the database uses it. */
export const NEXT_MASTER_KEY_FILE = "master.key.next";
/** The secret a rekey replaced, kept until the database has opened with the new one. */
export const OLD_MASTER_KEY_FILE = "master.key.old";

/**
 * The secret an interrupted `spar rekey` left in master.key.next, if any: the database opens with it
 * once the re-encryption committed. The caller zeroizes it.
 */
export function readNextMasterSecret(home: string): Buffer | undefined {
  const path = join(home, NEXT_MASTER_KEY_FILE);
  return existsSync(path) ? readFileSync(path) : undefined;
}

/**
 * Keeps the current master.key as `master.key.old-<time>` (UTC, `-2`, `-3` … should the name be
 * taken) before `spar rekey` replaces it: backups made until now open only with it (`spar restore
 * --master-key-file`). Written under a temporary name, fsynced, then linked into place, so the file
 * is whole or absent; 0600 like master.key. Returns its path.
 */
export function keepOldMasterSecret(home: string, now = new Date()): string {
  const secret = readFileSync(join(home, MASTER_KEY_FILE));
  const stamp = now.toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);
  const partial = join(home, `.${MASTER_KEY_FILE}.old-${process.pid}.partial`);
  rmSync(partial, { force: true });
  const fd = openSync(partial, "wx", 0o600);
  try {
    writeSync(fd, secret);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
    secret.fill(0);
  }
  try {
    for (let n = 1; ; n++) {
      const path = join(home, `${MASTER_KEY_FILE}.old-${stamp}${n > 1 ? `-${n}` : ""}`);
      try {
        linkSync(partial, path);
        fsyncDir(home);
        return path;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      }
    }
  } finally {
    rmSync(partial, { force: true });
  }
}

/** Writes the new secret to master.key.next (0600), fsynced with its directory, before any re-encryption. */
export function writeNextMasterSecret(home: string, secret: Buffer): void {
  const path = join(home, NEXT_MASTER_KEY_FILE);
  rmSync(path, { force: true });
  const fd = openSync(path, "wx", 0o600);
  try {
    writeSync(fd, secret);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  fsyncDir(home);
}

/**
 * Puts the rotated secret in place once the database uses it: master.key is kept as master.key.old
 * (a hard link, so master.key itself never goes missing), then master.key.next replaces master.key
 * in one rename. Each step is fsynced; at every point master.key or master.key.next opens the database.
 */
export function promoteNextMasterSecret(home: string): void {
  const current = join(home, MASTER_KEY_FILE);
  const old = join(home, OLD_MASTER_KEY_FILE);
  if (existsSync(current) && !existsSync(old)) {
    linkSync(current, old);
    fsyncDir(home);
  }
  renameSync(join(home, NEXT_MASTER_KEY_FILE), current);
  fsyncDir(home);
}

/** What settleMasterKeyFiles did: finished a rotation, undid one, or nothing. */
export type RekeySettlement = "completed" | "rolled-back" | undefined;

/**
 * Tidies the key files once `working` has opened the database. If it is master.key.next, the
 * re-encryption committed: the rotation is finished (promoteNextMasterSecret). Otherwise
 * master.key.next never took effect and is removed. master.key.old goes once master.key opens.
 */
export function settleMasterKeyFiles(home: string, working: Buffer): RekeySettlement {
  const next = readNextMasterSecret(home);
  let outcome: RekeySettlement;
  if (next) {
    outcome = next.equals(working) ? "completed" : "rolled-back";
    next.fill(0);
    if (outcome === "completed") promoteNextMasterSecret(home);
    else rmSync(join(home, NEXT_MASTER_KEY_FILE), { force: true });
  }
  const oldPath = join(home, OLD_MASTER_KEY_FILE);
  const currentPath = join(home, MASTER_KEY_FILE);
  if (existsSync(oldPath) && existsSync(currentPath)) {
    const current = readFileSync(currentPath);
    if (current.equals(working)) {
      rmSync(oldPath, { force: true });
      outcome ??= "completed";
    }
    current.fill(0);
  }
  if (outcome) fsyncDir(home);
  return outcome;
}

function fsyncDir(dir: string): void {
  if (process.platform === "win32") return;
  const fd = openSync(dir, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
