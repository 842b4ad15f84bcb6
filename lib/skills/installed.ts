/**
 * The installed skills: `<data dir>/skills/<name>/` folders and the lock file
 * `<data dir>/skills/skills.lock.json` that lists them. The lock file is the truth: a folder it does
 * not list is no skill (the catalog reads only listed names), and writing the lock is the one step
 * that commits a change. Everything before it is staged beside the set and can be undone; everything
 * after it is clean-up that recoverInstalled finishes.
 *
 * An install: write the files into `skills/.staging-<random>/` (0700, every file and folder
 * fsynced) → set any folder already at the name aside as another `.staging-…` → rename the staged
 * folder into place → write the lock to a `.staging-lock-….json` temp file, fsync, rename it over
 * the lock, fsync the folder (the commit) → delete what was set aside. A removal commits the lock
 * first, then moves the folder away and deletes it.
 *
 * recoverInstalled (called at start, and after any failed change) makes the disk say what the lock
 * says: a listed folder whose files do not match the lock's sha256 is swapped back for a
 * `.staging-…` folder that does (a replace cut off before its commit), then every `.staging-…` entry
 * and every folder the lock does not list is deleted. So a crash at any point leaves the set and the
 * lock exactly as before the change or exactly as after it. A listed folder that is missing or
 * modified with nothing to restore it from is reported, never deleted.
 *
 * One writer per data dir: changes within this process are serialized; the CLI changes the set
 * through the daemon's API.
 */
import { createHash, randomBytes } from "node:crypto";
import { lstat, mkdir, mkdtemp, open, readdir, rename, rm } from "node:fs/promises";
import { join, resolve } from "node:path";
import { isSparError, SparError } from "../../sdk/errors.js";
import { checkSkillFiles, type SkillFiles, type SkillLimits, skillDigest, skillLimits } from "./files.js";
import {
  type FindingInput,
  keptFindings,
  LOCK_FILE,
  LOCK_VERSION,
  type LockEntry,
  type LockFile,
  lockText,
  readLock,
  SKILLS_DIR,
} from "./lock.js";
import { parseSkill, SKILL_FILE, SKILL_NAME } from "./skill.js";
import { readSkillFolder } from "./source.js";

export {
  type FindingInput,
  LOCK_FILE,
  type LockEntry,
  type LockFile,
  type LockFinding,
  lockText,
  readLock,
  SKILLS_DIR,
} from "./lock.js";

/** Every name starting so is a leftover of an unfinished change. */
const STAGING = ".staging-";

/** A lock entry with its name and folder. */
export interface InstalledSkill extends LockEntry {
  name: string;
  dir: string;
}

/** What the caller knows about an install; name and version come from SKILL.md. */
export interface InstallEntry {
  source: string;
  /** The ref asked for, the commit or URL it resolved to, the skill's folder in the repository. */
  ref?: string;
  resolved?: string;
  path?: string;
  forced: boolean;
  /** The scanner's findings; the high and medium ones are kept in the lock. */
  findings: readonly FindingInput[];
}

/** The durable steps of a change, in order (removal: lock-staged, committed, moved). */
export type SkillStep = "staged" | "set-aside" | "moved" | "lock-staged" | "committed";

export interface ChangeOptions {
  /**
   * Called after each durable step. An error thrown here stops the change where it is, as a crash
   * would (nothing is cleaned until recoverInstalled): tests use it to cut a change at every step.
   */
  onStep?: (step: SkillStep) => void | Promise<void>;
}

/** How `installSkill` treats a name already taken, and the limits it checks the files against. */
export interface InstallOptions extends ChangeOptions {
  /** Replace a skill of the same name; otherwise that is CONFLICT. */
  replace?: boolean;
  /** Names that may not be installed (the bundled skills'): CONFLICT. */
  reserved?: ReadonlySet<string>;
  limits?: Partial<SkillLimits>;
  /** The clock for installed_at. */
  now?: () => Date;
}

/** What `recoverInstalled` found and did, by skill name. */
export interface RecoveryReport {
  /** `.staging-…` leftovers and unlisted folders deleted. */
  removed: string[];
  /** Listed skills put back from a staged copy that matched the lock. */
  restored: string[];
  /** Listed skills whose folder is missing. */
  missing: string[];
  /** Listed skills whose files no longer match the lock's sha256 (or are no folder). */
  modified: string[];
}

const skillsDir = (home: string) => join(home, SKILLS_DIR);

/** The installed skills, by name. */
export async function listInstalled(home: string): Promise<InstalledSkill[]> {
  const lock = await readLock(home);
  return Object.entries(lock.skills)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([name, entry]) => ({ name, dir: join(skillsDir(home), name), ...entry }));
}

/**
 * Installs a skill's files (already scanned) under the name its SKILL.md gives, atomically.
 * VALIDATION_FAILED for a bad SKILL.md or path, PAYLOAD_TOO_LARGE past the limits, CONFLICT for a
 * name installed already (unless `replace`) or reserved, STORE_FAILED when the disk fails (the set
 * and lock are then as they were).
 *
 * @example
 * const skill = await installSkill(home, files, { source: url, forced: false, findings });
 * skill.name; // "review-pull-request"
 */
export async function installSkill(
  home: string,
  files: SkillFiles,
  entry: InstallEntry,
  options: InstallOptions = {},
): Promise<InstalledSkill> {
  const [installed] = await installSkills(home, [{ files, entry }], options);
  return installed as InstalledSkill;
}

/**
 * Installs several skills as one change: every one of them, or (a refusal, a full disk, a crash)
 * none, since the lock is written once for all. Two of them with the same name are CONFLICT.
 *
 * @example
 * await installSkills(home, skills.map((s) => ({ files: s.files, entry: { source, forced: false, findings: [] } })));
 */
export async function installSkills(
  home: string,
  items: readonly { files: SkillFiles; entry: InstallEntry }[],
  options: InstallOptions = {},
): Promise<InstalledSkill[]> {
  const at = (options.now?.() ?? new Date()).toISOString();
  const records = items.map(({ files, entry }) => {
    checkSkillFiles(files, skillLimits(options.limits));
    const { meta } = parseSkill(skillText(files), SKILL_FILE);
    const { name } = meta;
    if (options.reserved?.has(name)) {
      throw new SparError(
        "CONFLICT",
        `a bundled skill is named "${name}"; an installed one may not take its name`,
        { name },
      );
    }
    const record: LockEntry = {
      source: entry.source,
      ...(entry.ref === undefined ? {} : { ref: entry.ref }),
      ...(entry.resolved === undefined ? {} : { resolved: entry.resolved }),
      ...(entry.path === undefined || entry.path === "" ? {} : { path: entry.path }),
      version: meta.version,
      sha256: skillDigest(files),
      files: fileHashes(files),
      installed_at: at,
      forced: entry.forced,
      findings: keptFindings(entry.findings),
    };
    return { name, files, record };
  });
  const seen = new Set<string>();
  for (const { name } of records) {
    if (seen.has(name)) throw new SparError("CONFLICT", `two of the skills are named "${name}"`, { name });
    seen.add(name);
  }
  return serialized(home, async () => {
    const dir = skillsDir(home);
    await mkdir(dir, { recursive: true, mode: 0o700 }).catch((err) => {
      throw storeFailed(`could not create ${dir}`, err);
    });
    const lock = await readLock(home);
    for (const { name } of records) {
      const installed = lock.skills[name];
      if (installed && options.replace !== true) {
        throw new SparError(
          "CONFLICT",
          `"${name}" is installed already (version ${installed.version} from ${installed.source}); install with --replace (API: "replace": true) to put this one in its place`,
          { name },
        );
      }
    }
    const skills = { ...lock.skills };
    for (const { name, record } of records) skills[name] = record;
    const next: LockFile = { version: LOCK_VERSION, skills };
    const what = records.map((r) => r.name).join(", ");
    await change(home, `install ${what}`, options.onStep, async (step) => {
      const asides: string[] = [];
      for (const { name, files } of records) {
        const target = join(dir, name);
        const staging = await mkdtemp(join(dir, STAGING));
        await writeTree(staging, files);
        await step("staged");
        if (await exists(target)) {
          const aside = join(dir, spareName());
          await rename(target, aside);
          await syncDir(dir);
          asides.push(aside);
          await step("set-aside");
        }
        await rename(staging, target);
        await syncDir(dir);
        await step("moved");
      }
      await commitLock(dir, next, step);
      for (const aside of asides) await rm(aside, { recursive: true, force: true }).catch(() => undefined);
    });
    return records.map(({ name, record }) => ({ name, dir: join(dir, name), ...record }));
  });
}

/** Every file's sha256, by path: what `spar move verify` compares the disk with. */
export function fileHashes(files: SkillFiles): Record<string, string> {
  return Object.fromEntries(
    [...files].map(([path, content]) => [path, createHash("sha256").update(content).digest("hex")]),
  );
}

/**
 * Removes an installed skill: NOT_FOUND when the lock does not list it, VALIDATION_FAILED for what
 * is no skill name. Returns what was removed.
 */
export async function removeSkill(
  home: string,
  name: string,
  options: ChangeOptions = {},
): Promise<InstalledSkill> {
  if (!SKILL_NAME.test(name)) throw new SparError("VALIDATION_FAILED", `"${name}" is not a skill name`);
  return serialized(home, async () => {
    const dir = skillsDir(home);
    const lock = await readLock(home);
    const entry = lock.skills[name];
    if (!entry) throw new SparError("NOT_FOUND", `no installed skill is named "${name}"`, { name });
    const { [name]: _, ...rest } = lock.skills;
    const target = join(dir, name);
    await change(home, `remove ${name}`, options.onStep, async (step) => {
      await commitLock(dir, { version: LOCK_VERSION, skills: rest }, step);
      if (await exists(target)) {
        const trash = join(dir, spareName());
        await rename(target, trash);
        await syncDir(dir);
        await step("moved");
        await rm(trash, { recursive: true, force: true }).catch(() => undefined);
      }
    });
    return { name, dir: target, ...entry };
  });
}

/**
 * Makes `<data dir>/skills/` what its lock says (see the top of this file); call it at start. A
 * damaged lock is STORE_FAILED and nothing is touched.
 */
export async function recoverInstalled(home: string): Promise<RecoveryReport> {
  return serialized(home, () => restore(home));
}

// Changes, one at a time per data dir.
const queues = new Map<string, Promise<unknown>>();

function serialized<T>(home: string, work: () => Promise<T>): Promise<T> {
  const key = resolve(home);
  const run = (queues.get(key) ?? Promise.resolve()).then(work, work);
  const settled = run.then(
    () => undefined,
    () => undefined,
  );
  queues.set(key, settled);
  void settled.then(() => {
    if (queues.get(key) === settled) queues.delete(key);
  });
  return run;
}

/** A crash the caller asked for (onStep threw): carried out of `change` untouched. */
class Interruption {
  constructor(readonly error: unknown) {}
}

/**
 * Runs a change's steps. A failure puts the set back as the lock says at once (restore) and
 * surfaces as STORE_FAILED, or as itself when it is a SparError; an interruption leaves everything.
 */
async function change(
  home: string,
  what: string,
  onStep: ChangeOptions["onStep"],
  work: (step: (s: SkillStep) => Promise<void>) => Promise<void>,
): Promise<void> {
  const step = async (s: SkillStep) => {
    try {
      await onStep?.(s);
    } catch (err) {
      throw new Interruption(err);
    }
  };
  try {
    await work(step);
  } catch (err) {
    if (err instanceof Interruption) throw err.error;
    await restore(home).catch(() => undefined);
    throw isSparError(err) ? err : storeFailed(`could not ${what}`, err);
  }
}

async function restore(home: string): Promise<RecoveryReport> {
  const report: RecoveryReport = { removed: [], restored: [], missing: [], modified: [] };
  const dir = skillsDir(home);
  if (!(await exists(dir))) return report;
  const lock = await readLock(home);
  try {
    const spares = (await readdir(dir)).filter((n) => n.startsWith(STAGING));
    for (const [name, entry] of Object.entries(lock.skills).sort(([a], [b]) => (a < b ? -1 : 1))) {
      const target = join(dir, name);
      const current = await digestOf(target);
      if (current === entry.sha256) continue;
      const spare = await findSpare(dir, spares, entry.sha256);
      if (spare === undefined) {
        report[current === null ? "missing" : "modified"].push(name);
        continue;
      }
      if (current !== null) await rename(target, join(dir, spareName()));
      await rename(join(dir, spare), target);
      spares.splice(spares.indexOf(spare), 1);
      report.restored.push(name);
    }
    for (const name of (await readdir(dir)).sort()) {
      if (name === LOCK_FILE) continue;
      const path = join(dir, name);
      const leftover = name.startsWith(STAGING);
      if (leftover || ((await lstat(path)).isDirectory() && !Object.hasOwn(lock.skills, name))) {
        await rm(path, { recursive: true, force: true });
        report.removed.push(name);
      }
    }
    await syncDir(dir);
  } catch (err) {
    throw storeFailed(`could not recover ${dir}`, err);
  }
  return report;
}

/** Installed folders are read back with room to spare: what matters here is the digest. */
export const READ_BACK: Partial<SkillLimits> = {
  maxFiles: 10_000,
  maxSkillBytes: 64 * 1024 * 1024,
  maxFileBytes: 64 * 1024 * 1024,
  maxTotalBytes: 256 * 1024 * 1024,
};

/** The digest of the folder at `path`; null when nothing is there, "" when it is no readable skill folder. */
async function digestOf(path: string): Promise<string | null> {
  const info = await lstat(path).catch(() => null);
  if (!info) return null;
  if (!info.isDirectory()) return "";
  try {
    return skillDigest(await readSkillFolder(path, READ_BACK));
  } catch {
    return "";
  }
}

async function findSpare(
  dir: string,
  spares: readonly string[],
  sha256: string,
): Promise<string | undefined> {
  for (const spare of spares) {
    if ((await digestOf(join(dir, spare))) === sha256) return spare;
  }
  return undefined;
}

const spareName = () => `${STAGING}${randomBytes(6).toString("hex")}`;

async function exists(path: string): Promise<boolean> {
  return (await lstat(path).catch(() => null)) !== null;
}

/** The files under `root`, each written, fsynced and closed; then every folder fsynced, deepest first. */
async function writeTree(root: string, files: SkillFiles): Promise<void> {
  const folders = new Set<string>();
  for (const [path, content] of [...files].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const parts = path.split("/");
    for (let i = 1; i < parts.length; i++) {
      const folder = parts.slice(0, i).join("/");
      if (folders.has(folder)) continue;
      await mkdir(join(root, folder), { mode: 0o700 });
      folders.add(folder);
    }
    await writeDurably(join(root, ...parts), content);
  }
  for (const folder of [...folders].sort((a, b) => b.length - a.length)) await syncDir(join(root, folder));
  await syncDir(root);
}

async function writeDurably(file: string, content: Buffer): Promise<void> {
  const handle = await open(file, "wx", 0o600);
  try {
    await handle.writeFile(content);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** The lock written whole to a temp file, fsynced, renamed over the old one: the commit. */
async function commitLock(dir: string, lock: LockFile, step: (s: SkillStep) => Promise<void>): Promise<void> {
  const temp = join(dir, `${STAGING}lock-${randomBytes(6).toString("hex")}.json`);
  await writeDurably(temp, Buffer.from(lockText(lock)));
  await step("lock-staged");
  await rename(temp, join(dir, LOCK_FILE));
  await syncDir(dir);
  await step("committed");
}

function skillText(files: SkillFiles): string {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(files.get(SKILL_FILE));
  } catch {
    throw new SparError("VALIDATION_FAILED", `${SKILL_FILE} is not UTF-8 text`, { file: SKILL_FILE });
  }
}

function storeFailed(what: string, err: unknown): SparError {
  if (isSparError(err)) return err;
  return new SparError("STORE_FAILED", `${what}: ${(err as Error).message}`, {}, { cause: err });
}
