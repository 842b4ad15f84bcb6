/**
 * `<snapshot>.manifest.json`, the file beside every backup of the SQLite store: written by the store
 * itself right after the snapshot (so `spar backup`, offline or online, and `POST
 * /api/v1/store/backup` leave the same pair), read and checked by `spar restore`.
 */
import { createHash } from "node:crypto";
import { createReadStream, existsSync, readFileSync } from "node:fs";
import { open } from "node:fs/promises";
import { SparError } from "../sdk/errors.js";
import { KERNEL_VERSION } from "../sdk/version.js";

/** `<snapshot>.manifest.json`: what a snapshot holds and how to check and open it. */
export interface BackupManifest {
  format: "spar-backup";
  /** The Spar that wrote it. */
  version: string;
  schema_version: number;
  created_at: string;
  bytes: number;
  sha256: string;
  /** The database's key-derivation salt, hex: the key is Argon2id(master secret, salt). */
  salt: string;
}

/** Where the manifest of `snapshot` lives. */
export function manifestPathOf(snapshot: string): string {
  return `${snapshot}.manifest.json`;
}

/**
 * Writes the manifest of the finished snapshot at `snapshot` (a new file, 0600, fsynced; an existing
 * one is CONFLICT, never overwritten) and returns it.
 *
 * @example
 * const manifest = await writeBackupManifest("/backups/spar.db", { bytes, schema_version, salt });
 */
export async function writeBackupManifest(
  snapshot: string,
  facts: { bytes: number; schema_version: number; salt: Buffer },
): Promise<BackupManifest> {
  const manifest: BackupManifest = {
    format: "spar-backup",
    version: KERNEL_VERSION,
    schema_version: facts.schema_version,
    created_at: new Date().toISOString(),
    bytes: facts.bytes,
    sha256: await sha256Of(snapshot),
    salt: facts.salt.toString("hex"),
  };
  const path = manifestPathOf(snapshot);
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, "wx", 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    throw new SparError("CONFLICT", `${path} already exists; Spar does not overwrite a backup's manifest`);
  }
  try {
    await handle.writeFile(`${JSON.stringify(manifest, null, 2)}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  return manifest;
}

/** The manifest beside `snapshot`, checked field by field: VALIDATION_FAILED names what is wrong. */
export function readBackupManifest(snapshot: string): BackupManifest {
  const path = manifestPathOf(snapshot);
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

export async function sha256Of(path: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest("hex");
}
