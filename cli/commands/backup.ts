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
 * deleted) and the snapshot put in its place.
 */
import { createHash, randomBytes } from "node:crypto";
import { createReadStream, existsSync, mkdtempSync, readFileSync, renameSync, rmSync } from "node:fs";
import { copyFile, open, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { loadSparConfig } from "../../kernel/host/config-sections.js";
import { MASTER_KEY_FILE, readMasterSecret, resolveHome, withDotEnv } from "../../lib/home.js";
import type { SparConfig } from "../../sdk/config.js";
import { isSparError, SparError } from "../../sdk/errors.js";
import { KERNEL_VERSION } from "../../sdk/version.js";
import { api } from "../client.js";
import { type GlobalOptions, printJson } from "../output.js";

const DATABASE = "spar.db";
const SALT = "spar.db.salt";
/** The database and what belongs to it, moved aside together so the set still opens as it was. */
const COMPANIONS = ["", "-wal", "-shm", ".salt"];

/** `<file>.manifest.json`. */
export interface BackupManifest {
  format: "spar-backup";
  version: string;
  schema_version: number;
  created_at: string;
  bytes: number;
  sha256: string;
  /** The database's key-derivation salt, hex: the key is Argon2id(master secret, salt). */
  salt: string;
}

/** `spar backup <file>`: the snapshot at `file` (made absolute), then its manifest beside it. */
export async function backup(file: string, options: GlobalOptions): Promise<void> {
  const home = resolveHome();
  const destination = resolve(file);
  const manifestPath = `${destination}.manifest.json`;
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
  const snapshot = pid
    ? await api<{ bytes: number; schema_version: number }>("POST", "/api/v1/store/backup", {
        path: destination,
      })
    : await withOfflineStore(home, home, (store) => store.backup(destination));
  const manifest: BackupManifest = {
    format: "spar-backup",
    version: KERNEL_VERSION,
    schema_version: snapshot.schema_version,
    created_at: new Date().toISOString(),
    bytes: snapshot.bytes,
    sha256: await sha256Of(destination),
    salt: readFileSync(saltPath).toString("hex"),
  };
  await writeDurably(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
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
}

/** `spar restore <file>`: checks the backup at `file`, then puts it in place of the current database. */
export async function restore(file: string, options: RestoreOptions): Promise<void> {
  const home = resolveHome();
  const snapshot = resolve(file);
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
  const manifest = readManifest(snapshot);
  const actual = await sha256Of(snapshot);
  if (actual !== manifest.sha256) {
    throw new SparError(
      "STORE_CORRUPT",
      `${snapshot} does not match its manifest: sha256 ${actual}, the manifest says ${manifest.sha256}. ` +
        "The snapshot is damaged or was changed after the backup; nothing was restored",
    );
  }
  await checkOpens(home, snapshot, manifest);
  const dbPath = join(home, DATABASE);
  if (existsSync(dbPath) && !(await confirmed(dbPath, options))) {
    throw new SparError("CANCELLED", "nothing was restored");
  }
  const aside = await putInPlace(home, snapshot, manifest);
  if (options.json)
    return printJson({ restored: snapshot, database: dbPath, moved_aside: aside, ...manifest });
  process.stdout.write(
    `Restored ${snapshot} (made ${manifest.created_at} by Spar ${manifest.version}, schema ` +
      `${manifest.schema_version}) as ${dbPath}.\n` +
      (aside.length > 0
        ? `The previous database was moved aside, nothing deleted: ${aside.join(", ")} in ${home}\n`
        : "There was no previous database.\n"),
  );
}

/** The manifest beside `snapshot`, checked field by field: VALIDATION_FAILED names what is wrong. */
function readManifest(snapshot: string): BackupManifest {
  const path = `${snapshot}.manifest.json`;
  if (!existsSync(snapshot)) throw new SparError("VALIDATION_FAILED", `no such backup: ${snapshot}`);
  if (!existsSync(path)) {
    throw new SparError("VALIDATION_FAILED", `${path} is missing; spar backup writes it beside the snapshot`);
  }
  let value: Record<string, unknown>;
  try {
    value = JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
  } catch (err) {
    throw new SparError("VALIDATION_FAILED", `${path} is not valid JSON: ${(err as Error).message}`);
  }
  const wrong = (field: string, expected: string) =>
    new SparError("VALIDATION_FAILED", `${path}: ${field} must be ${expected}`);
  if (typeof value !== "object" || value === null) throw wrong("the manifest", "an object");
  if (value.format !== "spar-backup") throw wrong("format", '"spar-backup"');
  if (typeof value.version !== "string") throw wrong("version", "a string");
  if (!Number.isInteger(value.schema_version)) throw wrong("schema_version", "an integer");
  if (typeof value.created_at !== "string") throw wrong("created_at", "a string");
  if (!Number.isInteger(value.bytes)) throw wrong("bytes", "an integer");
  if (typeof value.sha256 !== "string" || !/^[0-9a-f]{64}$/.test(value.sha256))
    throw wrong("sha256", "64 hex digits");
  if (typeof value.salt !== "string" || !/^[0-9a-f]{32}$/.test(value.salt))
    throw wrong("salt", "32 hex digits");
  return value as unknown as BackupManifest;
}

/**
 * Opens a copy of the snapshot in a temporary data dir exactly as start opens a database (the
 * Ring, the active store plugin, the current master secret, its migrations), and requires its
 * integrity check to pass. The copy is deleted afterwards; the snapshot itself is only read.
 */
async function checkOpens(home: string, snapshot: string, manifest: BackupManifest): Promise<void> {
  const scratch = mkdtempSync(join(home, ".restore-check-"));
  try {
    await copyFile(snapshot, join(scratch, DATABASE));
    await writeFile(join(scratch, SALT), Buffer.from(manifest.salt, "hex"), { mode: 0o600 });
    const check = await withOfflineStore(home, scratch, (store) => store.integrity()).catch(
      (err: unknown) => {
        throw restoreError(snapshot, join(scratch, DATABASE), err);
      },
    );
    if (check.status !== "ok" || !check.checked) {
      throw new SparError(
        "STORE_CORRUPT",
        `${snapshot} opens but fails its integrity check (${check.detail ?? check.status}); nothing was restored`,
      );
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** What opening the copy threw, said of the snapshot (the temporary copy's path is nobody's concern). */
function restoreError(snapshot: string, copy: string, err: unknown): unknown {
  if (!isSparError(err)) return err;
  if (err.code === "STORE_KEY_INVALID") {
    return new SparError(
      "STORE_KEY_INVALID",
      `${snapshot} does not open with the current master secret: the snapshot was made with another master ` +
        "key (master.key, or SPAR_MASTER_KEY when set). Restore it with the master secret it was made with; " +
        "nothing was restored",
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
 * Copies the snapshot and its salt in under temporary names (fsynced), then moves the current
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
): Promise<T> {
  const env = withDotEnv(home);
  const { config } = loadSparConfig(home, env);
  const ring = await openRing(home, dataDir, config, env);
  try {
    const secret = readMasterSecret(home, env);
    try {
      await ring.open(secret);
    } finally {
      secret.fill(0);
    }
    return await use(ring.services.store);
  } finally {
    await ring.close().catch(() => undefined);
  }
}

async function openRing(home: string, dataDir: string, config: SparConfig, env: NodeJS.ProcessEnv) {
  const [{ createLogger }, { discoverPlugins, pluginRoots }, { createRing }] = await Promise.all([
    import("../../kernel/logger.js"),
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

async function sha256Of(path: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest("hex");
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
