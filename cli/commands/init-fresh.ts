import { existsSync, renameSync } from "node:fs";
import { join } from "node:path";
import { loadSparConfig } from "../../kernel/host/config-sections.js";
import { withDotEnv } from "../../lib/home.js";
import { isSparError, SparError } from "../../sdk/errors.js";

/** The database and the files that belong to it: SQLite's journal files and the key-derivation salt. */
const DATABASE = "spar.db";
const COMPANIONS = ["", "-wal", "-shm", ".salt"];

export interface MovedFile {
  from: string;
  to: string;
}

/**
 * `spar init --fresh`: moves a database that cannot be opened out of the way, so that `init` and
 * `start` make a new one. Nothing is deleted: `spar.db` becomes `spar.db.unreadable-<time>` and its
 * `-wal`, `-shm` and `.salt` follow under the same new name, so the set still opens, as SQLite and
 * the store expect, with the original master secret once renamed back. Refused while a daemon runs
 * on the data dir, and for a database that opens and passes its check (there is nothing to recover from).
 */
export async function moveDatabaseAside(home: string, now = new Date()): Promise<MovedFile[]> {
  const { readPidFile } = await import("../daemon.js");
  const pid = readPidFile(home);
  if (pid) {
    throw new SparError(
      "CONFLICT",
      `a Spar daemon (pid ${pid}) is running on ${home}; stop it first (spar stop), then run spar init --fresh`,
    );
  }
  const present = COMPANIONS.map((suffix) => `${DATABASE}${suffix}`).filter((f) => existsSync(join(home, f)));
  if (present.length === 0) return [];
  if (await opensFine(home)) {
    throw new SparError(
      "CONFLICT",
      `${join(home, DATABASE)} opens with the current master secret and passes its integrity check, so ` +
        "--fresh leaves it alone. To start afresh anyway, stop the daemon and move spar.db, spar.db-wal, " +
        `spar.db-shm and spar.db.salt out of ${home} yourself`,
    );
  }
  const base = backupName(home, now);
  return present.map((file) => {
    const to = `${base}${file.slice(DATABASE.length)}`;
    renameSync(join(home, file), join(home, to));
    return { from: file, to };
  });
}

/**
 * True when the database opens and its integrity check passes; false when it really cannot be read
 * (see unreadable). Anything else (a channel plugin refusing its settings, a full disk) is thrown:
 * it says nothing about the database, which must then stay where it is.
 */
async function opensFine(home: string): Promise<boolean> {
  if (!existsSync(join(home, DATABASE))) return false;
  const { checkStoreOffline } = await import("./store-check.js");
  // As start sees it: with <data dir>/.env beneath the environment, where channel tokens live.
  const env = withDotEnv(home);
  // A broken config is its own error, reported before anything moves.
  const { config } = loadSparConfig(home, env);
  try {
    return (await checkStoreOffline(home, config, env)).status === "ok";
  } catch (err) {
    if (unreadable(err, config.plugins.store)) return false;
    throw err;
  }
}

/**
 * A failure that is the database's own: no usable master secret, a key that does not decrypt it, a
 * file that is not Spar's format or older than this release upgrades, or damage. These come from reading the secret (no plugin) or from
 * the store plugin; the same codes from any other plugin are not about the database.
 */
function unreadable(err: unknown, storePlugin: string): boolean {
  if (!isSparError(err)) return false;
  if (!["STORE_KEY_INVALID", "STORE_CORRUPT", "STORE_FAILED", "STORE_TOO_OLD"].includes(err.code))
    return false;
  const plugin = err.extra.plugin;
  return plugin === undefined || plugin === storePlugin;
}

/** `spar.db.unreadable-20250102-030405` (UTC), with `-2`, `-3` … should that name be taken. */
function backupName(home: string, now: Date): string {
  const stamp = now.toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);
  const taken = (name: string) => COMPANIONS.some((suffix) => existsSync(join(home, `${name}${suffix}`)));
  let name = `${DATABASE}.unreadable-${stamp}`;
  for (let n = 2; taken(name); n++) name = `${DATABASE}.unreadable-${stamp}-${n}`;
  return name;
}
