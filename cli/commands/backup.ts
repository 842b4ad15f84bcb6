/**
 * `spar backup <file>` and `spar restore <file>`. A backup is the store's online snapshot
 * (`Store.backup`: encrypted with the database's key, taken by the running daemon through
 * `POST /api/v1/store/backup`, or offline through the Ring) plus `<file>.manifest.json`: format,
 * Spar version, schema version, time, size, sha256, and the key-derivation salt (not a secret, but
 * without it the database key cannot be derived again from the master secret). The master secret
 * itself is never in a backup: it is kept, separately, by whoever keeps the backups.
 *
 * A restore checks before it moves anything: no daemon, a valid manifest, the checksum, and that
 * the snapshot opens with the current master secret and passes its integrity check (opened through
 * the Ring in a temporary data dir). Only then is the current database moved aside (nothing is
 * deleted) and the snapshot put in its place. A snapshot made under an older master secret (before
 * a `spar rekey`) is restored with `--master-key-file <old key>`: the checked copy is re-encrypted
 * under the current secret, and that copy goes in place, so the daemon opens it as it is.
 *
 * Both handle the SQLite store's `spar.db` only: on the PostgreSQL store they answer
 * BACKUP_UNSUPPORTED with the pg_dump / pg_restore command to run (lib/store-backup-advice.ts).
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync } from "node:fs";
import { copyFile, open, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { loadSparConfig } from "../../kernel/host/config-sections.js";
import {
  type BackupManifest,
  manifestPathOf,
  readBackupManifest,
  sha256Of,
} from "../../lib/backup-manifest.js";
import { MASTER_KEY_FILE, readMasterSecret, resolveHome, withDotEnv } from "../../lib/home.js";
import { refuseUnlessSnapshotStore } from "../../lib/store-backup-advice.js";
import type { SparConfig } from "../../sdk/config.js";
import { isSparError, SparError } from "../../sdk/errors.js";
import { KERNEL_VERSION } from "../../sdk/version.js";
import { api } from "../client.js";
import { type GlobalOptions, printJson } from "../output.js";

const DATABASE = "spar.db";
const SALT = "spar.db.salt";
/** The database and what belongs to it, moved aside together so the set still opens as it was. */
const COMPANIONS = ["", "-wal", "-shm", ".salt"];

/** `spar backup <file>`: the snapshot at `file` (made absolute), then its manifest beside it. */
export async function backup(file: string, options: GlobalOptions): Promise<void> {
  const home = resolveHome();
  const destination = resolve(file);
  refuseOtherStores(home, "backup", destination);
  const manifestPath = manifestPathOf(destination);
  if (existsSync(manifestPath)) {
    throw new SparError("CONFLICT", `${manifestPath} already exists; choose another name for the backup`);
  }
  const saltPath = join(home, SALT);
  if (!existsSync(join(home, DATABASE)) || !existsSync(saltPath)) {
    throw new SparError(
      "NOT_FOUND",
      `nothing to back up: there is no database in ${home} (spar start creates it)`,
    );
  }
  const { readPidFile } = await import("../daemon.js");
  const pid = readPidFile(home);
  // The store writes the manifest beside the snapshot, online (the daemon's route) or offline alike.
  if (pid) await api("POST", "/api/v1/store/backup", { path: destination });
  else await withOfflineStore(home, home, (store) => store.backup(destination));
  const manifest = readBackupManifest(destination);
  if (options.json)
    return printJson({ snapshot: destination, manifest: manifestPath, online: !!pid, ...manifest });
  process.stdout.write(
    `Backed up ${join(home, DATABASE)} (${pid ? `online, from the running daemon (pid ${pid})` : "offline"}):\n` +
      `  snapshot  ${destination} (${manifest.bytes} bytes, schema ${manifest.schema_version}, encrypted)\n` +
      `  manifest  ${manifestPath} (sha256 ${manifest.sha256})\n` +
      "The snapshot is encrypted and useless without the master secret (" +
      `${join(home, MASTER_KEY_FILE)}, or SPAR_MASTER_KEY when set). Back it up too, separately: ` +
      "never beside the snapshot.\n",
  );
}

export interface RestoreOptions extends GlobalOptions {
  yes?: boolean;
  /** The master secret the snapshot was made under, when it is not the current one (before a rekey). */
  masterKeyFile?: string;
}

/** `spar restore <file>`: checks the backup at `file`, then puts it in place of the current database. */
export async function restore(file: string, options: RestoreOptions): Promise<void> {
  const home = resolveHome();
  const snapshot = resolve(file);
  refuseOtherStores(home, "restore", snapshot);
  // Held until the snapshot is in place: a daemon started meanwhile is refused, naming the restore.
  const { claimDataDir } = await import("../daemon.js");
  const release = claimDataDir(home, "restore");
  try {
    await restoreHeld(home, snapshot, options);
  } finally {
    release();
  }
}

async function restoreHeld(home: string, snapshot: string, options: RestoreOptions): Promise<void> {
  const manifest = readBackupManifest(snapshot);
  const made = options.masterKeyFile ? readKeyFile(options.masterKeyFile) : undefined;
  const actual = await sha256Of(snapshot);
  if (actual !== manifest.sha256) {
    throw new SparError(
      "STORE_CORRUPT",
      `${snapshot} does not match its manifest: sha256 ${actual}, the manifest says ${manifest.sha256}. ` +
        "The snapshot is damaged or was changed after the backup; nothing was restored",
    );
  }
  const scratch = mkdtempSync(join(home, ".restore-check-"));
  try {
    const checked = await checkOpens(home, scratch, snapshot, manifest, made);
    const dbPath = join(home, DATABASE);
    if (existsSync(dbPath) && !(await confirmed(dbPath, options))) {
      throw new SparError("CANCELLED", "nothing was restored");
    }
    // Made under another secret: the copy re-encrypted under the current one goes in place.
    const aside = await putInPlace(home, made ? checked : snapshot, manifest);
    const rekeyed = made !== undefined;
    if (options.json)
      return printJson({ restored: snapshot, database: dbPath, moved_aside: aside, rekeyed, ...manifest });
    process.stdout.write(
      `Restored ${snapshot} (made ${manifest.created_at} by Spar ${manifest.version}, schema ` +
        `${manifest.schema_version}) as ${dbPath}.\n` +
        (rekeyed
          ? `It opened with ${resolve(options.masterKeyFile as string)} and was re-encrypted under the current master secret.\n`
          : "") +
        (aside.length > 0
          ? `The previous database was moved aside, nothing deleted: ${aside.join(", ")} in ${home}\n`
          : "There was no previous database.\n"),
    );
  } finally {
    made?.fill(0);
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** The bytes of `--master-key-file`, exactly as read (as master.key is read: they are the KDF's input). */
function readKeyFile(file: string): Buffer {
  const path = resolve(file);
  if (!existsSync(path)) throw new SparError("VALIDATION_FAILED", `--master-key-file: no such file: ${path}`);
  const secret = readFileSync(path);
  if (secret.length === 0) throw new SparError("VALIDATION_FAILED", `--master-key-file: ${path} is empty`);
  return secret;
}

/** `spar backup` and `spar restore` handle the SQLite store's database; other stores are told how. */
function refuseOtherStores(home: string, what: "backup" | "restore", file: string): void {
  const { config } = loadSparConfig(home, withDotEnv(home));
  refuseUnlessSnapshotStore(config.plugins.store, config.sections, what, file);
}

/**
 * Opens a copy of the snapshot in `scratch` (a temporary data dir) exactly as start opens a database
 * (the Ring, the active store plugin, its migrations) and requires its integrity check to pass. With
 * `made` (the secret it was made under) the copy opens with that and is then re-encrypted under the
 * current master secret; otherwise it must open with the current one. Returns the copy's path; the
 * snapshot itself is only read.
 */
async function checkOpens(
  home: string,
  scratch: string,
  snapshot: string,
  manifest: BackupManifest,
  made?: Buffer,
): Promise<string> {
  const copy = join(scratch, DATABASE);
  await copyFile(snapshot, copy);
  await writeFile(join(scratch, SALT), Buffer.from(manifest.salt, "hex"), { mode: 0o600 });
  const check = await withOfflineStore(
    home,
    scratch,
    async (store) => {
      const outcome = await store.integrity();
      if (made && outcome.status === "ok" && outcome.checked) {
        const current = readMasterSecret(home, withDotEnv(home));
        try {
          if (!current.equals(made)) await store.rekey(current);
        } finally {
          current.fill(0);
        }
      }
      return outcome;
    },
    made,
  ).catch((err: unknown) => {
    throw restoreError(snapshot, copy, err, made !== undefined);
  });
  if (check.status !== "ok" || !check.checked) {
    throw new SparError(
      "STORE_CORRUPT",
      `${snapshot} opens but fails its integrity check (${check.detail ?? check.status}); nothing was restored`,
    );
  }
  // Closed cleanly, the copy is one file: a journal left beside it would hold part of it.
  for (const journal of ["-wal", "-journal"]) {
    if (existsSync(`${copy}${journal}`)) {
      throw new SparError(
        "STORE_FAILED",
        `${snapshot} could not be re-encrypted cleanly; nothing was restored`,
      );
    }
  }
  return copy;
}

/** What opening the copy threw, said of the snapshot (the temporary copy's path is nobody's concern). */
function restoreError(snapshot: string, copy: string, err: unknown, keyFile: boolean): unknown {
  if (!isSparError(err)) return err;
  if (err.code === "STORE_KEY_INVALID" && keyFile) {
    return new SparError(
      "STORE_KEY_INVALID",
      `${snapshot} does not open with the secret in --master-key-file either; it was made under another ` +
        "master secret. Nothing was restored",
    );
  }
  if (err.code === "STORE_KEY_INVALID") {
    return new SparError(
      "STORE_KEY_INVALID",
      `${snapshot} does not open with the current master secret: the snapshot was made with another master ` +
        "key (master.key, or SPAR_MASTER_KEY when set), such as the one before a spar rekey (kept as " +
        "master.key.old-<time>). Restore it with that secret: spar restore <file> --master-key-file " +
        "<old key file>; nothing was restored",
    );
  }
  const reason = err.message.replaceAll(copy, "it");
  return new SparError(err.code, `${snapshot} cannot be restored: ${reason}; nothing was restored`);
}

/** On a terminal without --yes, asks; elsewhere --yes is required to replace an existing database. */
async function confirmed(dbPath: string, options: RestoreOptions): Promise<boolean> {
  if (options.yes) return true;
  if (options.json || !process.stdin.isTTY || !process.stdout.isTTY) {
    throw new SparError(
      "VALIDATION_FAILED",
      `${dbPath} exists and would be replaced (moved aside, not deleted); pass --yes to restore over it`,
    );
  }
  const { createInterface } = await import("node:readline/promises");
  const rl = createInterface({ input: process.stdin, output: process.stdout });
  try {
    const answer = await rl.question(`Replace ${dbPath} (it is moved aside, not deleted)? [y/N] `);
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    rl.close();
  }
}

/**
 * Copies the snapshot (or its re-encrypted copy) and its salt in under temporary names (fsynced), then moves the current
 * database set aside as `spar.db.before-restore-<time>[-wal|-shm|.salt]` and renames the new pair
 * into place: a crash leaves either the old set or the new one, and the old set is never deleted.
 * Returns the names the old files now have.
 */
async function putInPlace(home: string, snapshot: string, manifest: BackupManifest): Promise<string[]> {
  const tag = randomBytes(6).toString("hex");
  const newDb = join(home, `.${DATABASE}.restore-${tag}`);
  const newSalt = join(home, `.${SALT}.restore-${tag}`);
  try {
    await copyFile(snapshot, newDb);
    await fsyncFile(newDb, 0o600);
    await writeDurably(newSalt, Buffer.from(manifest.salt, "hex"));
    const base = asideName(home, new Date());
    const aside: string[] = [];
    for (const suffix of COMPANIONS) {
      const from = join(home, `${DATABASE}${suffix}`);
      if (!existsSync(from)) continue;
      renameSync(from, join(home, `${base}${suffix}`));
      aside.push(`${base}${suffix}`);
    }
    renameSync(newSalt, join(home, SALT));
    renameSync(newDb, join(home, DATABASE));
    await fsyncFile(home);
    return aside;
  } finally {
    rmSync(newDb, { force: true });
    rmSync(newSalt, { force: true });
  }
}

/** `spar.db.before-restore-20260102-030405` (UTC), with `-2`, `-3` … should that name be taken. */
function asideName(home: string, now: Date): string {
  const stamp = now.toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);
  const taken = (name: string) => COMPANIONS.some((suffix) => existsSync(join(home, `${name}${suffix}`)));
  let name = `${DATABASE}.before-restore-${stamp}`;
  for (let n = 2; taken(name); n++) name = `${DATABASE}.before-restore-${stamp}-${n}`;
  return name;
}

/**
 * Opens the store of data dir `dataDir` offline, as store-check.ts does (the plugins and config of
 * `home`, the master secret of `home`), runs `use`, and closes it. The caller has made sure no daemon
 * runs on `home`.
 */
async function withOfflineStore<T>(
  home: string,
  dataDir: string,
  use: (store: Awaited<ReturnType<typeof openRing>>["services"]["store"]) => Promise<T>,
  secret?: Buffer,
): Promise<T> {
  const env = withDotEnv(home);
  const { config } = loadSparConfig(home, env);
  const ring = await openRing(home, dataDir, config, env);
  try {
    // A secret given by the caller stays the caller's to zeroize.
    const current = secret ?? readMasterSecret(home, env);
    try {
      await ring.open(current);
    } finally {
      if (!secret) current.fill(0);
    }
    return await use(ring.services.store);
  } finally {
    await ring.close().catch(() => undefined);
  }
}

async function openRing(home: string, dataDir: string, config: SparConfig, env: NodeJS.ProcessEnv) {
  const [{ createLogger }, { discoverPlugins, pluginRoots }, { createRing }] = await Promise.all([
    import("../../lib/logger.js"),
    import("../../kernel/host/plugin-manifest.js"),
    import("../../kernel/ring.js"),
  ]);
  const plugins = discoverPlugins(pluginRoots(home, config.plugins.dirs), KERNEL_VERSION);
  // Silent: what goes wrong is thrown, and said once, by the command.
  return createRing({
    config,
    home: dataDir,
    env,
    version: KERNEL_VERSION,
    plugins,
    log: createLogger(() => undefined),
  });
}

/** Writes a new file (refusing an existing one), owner-only, and fsyncs it. */
async function writeDurably(path: string, data: string | Buffer): Promise<void> {
  const handle = await open(path, "wx", 0o600);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** fsync of a file (with its mode set first, when given) or of a folder. */
async function fsyncFile(path: string, mode?: number): Promise<void> {
  const handle = await open(path, "r");
  try {
    if (mode !== undefined) await handle.chmod(mode);
    await handle.sync();
  } catch (err) {
    if (mode !== undefined || (err as NodeJS.ErrnoException).code !== "EINVAL") throw err;
  } finally {
    await handle.close();
  }
}
