/**
 * `spar rekey`: rotates the master secret. A new random secret goes to master.key.next, the store
 * re-encrypts the database under its key (Store.rekey), then master.key.next replaces master.key.
 * The old secret is kept first as master.key.old-<time> (0600): every backup made before the rekey
 * opens only with it (`spar restore <file> --master-key-file <it>`). Killed at any point,
 * master.key or master.key.next opens the database, and the next open finishes or undoes the
 * rotation by itself (plugins/store-sqlite/rekey.ts).
 */
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { loadConfig } from "../../kernel/host/config.js";
import { discoverPlugins, pluginRoots } from "../../kernel/host/plugin-manifest.js";
import { createRing } from "../../kernel/ring.js";
import {
  keepOldMasterSecret,
  MASTER_KEY_FILE,
  promoteNextMasterSecret,
  readMasterSecret,
  resolveHome,
  withDotEnv,
  writeNextMasterSecret,
} from "../../lib/home.js";
import { createLogger } from "../../lib/logger.js";
import { SparError } from "../../sdk/errors.js";
import { KERNEL_VERSION } from "../../sdk/version.js";
import { type GlobalOptions, printJson } from "../output.js";

export interface RekeyOptions extends GlobalOptions {
  yes?: boolean;
}

/** As `spar init` makes it. */
const SECRET_BYTES = 32;

/**
 * Rotates `<home>/master.key` and re-encrypts the database with it, holding the data dir's pid file
 * throughout (a `spar start` meanwhile is refused, naming the rekey). Refused while a daemon runs,
 * when the secret comes from SPAR_MASTER_KEY (Spar cannot change a variable), and without `--yes`.
 */
export async function rekey(options: RekeyOptions, startEnv = process.env): Promise<void> {
  const home = resolveHome(startEnv);
  const env = withDotEnv(home, startEnv);
  // Held for the whole rotation, so a daemon started meanwhile is refused instead of meeting SQLITE_BUSY.
  const { claimDataDir } = await import("../daemon.js");
  const release = claimDataDir(home, "rekey");
  try {
    await rotate(home, options, env);
  } finally {
    release();
  }
}

async function rotate(home: string, options: RekeyOptions, env: NodeJS.ProcessEnv): Promise<void> {
  refuseUnsafe(home, options, env);
  const config = loadConfig(home, env);
  const plugins = discoverPlugins(pluginRoots(home, config.plugins.dirs), KERNEL_VERSION);
  // The first open says what it settled of an earlier rotation; the check after this one is quiet.
  const open = async (log = createLogger()) => {
    const ring = createRing({ config, home, env, version: KERNEL_VERSION, plugins, log });
    const secret = readMasterSecret(home, env);
    try {
      await ring.open(secret);
    } catch (err) {
      await ring.close().catch(() => undefined);
      throw err;
    } finally {
      secret.fill(0);
    }
    return ring;
  };

  // Opening first settles what an earlier, interrupted rotation left, and proves the current key.
  const ring = await open();
  // Before anything changes, so that at every point the old secret is somewhere.
  let kept: string;
  try {
    kept = keepOldMasterSecret(home);
  } catch (err) {
    await ring.close();
    throw err;
  }
  const next = randomBytes(SECRET_BYTES);
  try {
    writeNextMasterSecret(home, next);
    await ring.services.store.rekey(next);
  } finally {
    next.fill(0);
    await ring.close();
  }
  promoteNextMasterSecret(home);
  // Opening with the new master.key proves it, and deletes master.key.old.
  await (await open(createLogger(() => undefined))).close();

  const path = join(home, MASTER_KEY_FILE);
  if (options.json) return printJson({ rekeyed: true, master_key: path, old_master_key: kept });
  process.stdout.write(
    `Re-encrypted the database under a new master secret, now in ${path}.\n` +
      `The old secret is kept in ${kept} (mode 0600): backups made before now open only with it ` +
      `(spar restore <file> --master-key-file ${kept}). Keep it with your copies of master.key, away ` +
      "from the backups, and delete it once no backup needs it.\n",
  );
}

function refuseUnsafe(home: string, options: RekeyOptions, env: NodeJS.ProcessEnv): void {
  if (env.SPAR_MASTER_KEY) {
    throw new SparError(
      "VALIDATION_FAILED",
      "the master secret comes from SPAR_MASTER_KEY, which spar rekey cannot change. To rotate it: write " +
        `its value to ${join(home, MASTER_KEY_FILE)} (mode 0600, no trailing newline), unset SPAR_MASTER_KEY ` +
        "(and remove it from .env), then run spar rekey. The new secret stays in master.key: it is 32 random " +
        "bytes, which an environment variable cannot hold",
    );
  }
  if (!existsSync(join(home, "spar.db"))) {
    throw new SparError("NOT_FOUND", `no database in ${home} to re-encrypt; spar start creates one`);
  }
  if (!options.yes) {
    throw new SparError(
      "VALIDATION_FAILED",
      `spar rekey replaces ${join(home, MASTER_KEY_FILE)} with a new random secret and re-encrypts the ` +
        "database under it; backups made before then keep opening only with the old secret, which is kept " +
        "as master.key.old-<time> in the data dir (spar restore --master-key-file takes it). Run again " +
        "with --yes to go ahead",
    );
  }
}
