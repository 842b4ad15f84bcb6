/**
 * `spar move verify`: an installed skill's files on disk against the sha256 of each that the lock
 * recorded at install. A file whose bytes differ is changed, one the lock lists and the disk lacks is
 * missing, one the disk has and the lock does not is extra; a symbolic link or device in the folder
 * is reported as changed (nothing is followed). An entry an older Spar wrote, without per-file
 * hashes, is checked whole against its `sha256` (skillDigest) and says so.
 */
import { createHash } from "node:crypto";
import { lstat, readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { isSparError } from "../../sdk/errors.js";
import { skillDigest } from "./files.js";
import { READ_BACK } from "./installed.js";
import { type LockEntry, readLock, SKILLS_DIR } from "./lock.js";
import { readSkillFolder } from "./source.js";

/** One skill's check. */
export interface VerifyReport {
  name: string;
  /** True when the folder is exactly what was installed. */
  ok: boolean;
  changed: string[];
  missing: string[];
  extra: string[];
  /** Why a report is less precise or the folder unreadable ("no per-file hashes", "the folder is gone"). */
  note?: string;
}

/** Where in the folder something is not a regular file or folder. */
type Listing = { files: Map<string, string>; odd: string[] };

/**
 * Checks the installed skills (or the one named; NOT_FOUND when the lock has no such skill is the
 * caller's to say) against the lock.
 *
 * @example
 * const [report] = await verifyInstalled(home, ["review-code"]);
 * report.changed; // ["scripts/run.sh"]
 */
export async function verifyInstalled(home: string, names?: readonly string[]): Promise<VerifyReport[]> {
  const lock = await readLock(home);
  const wanted = names ?? Object.keys(lock.skills).sort();
  const reports: VerifyReport[] = [];
  for (const name of wanted) {
    const entry = lock.skills[name];
    if (entry) reports.push(await verifyOne(join(home, SKILLS_DIR, name), name, entry));
  }
  return reports;
}

/** One installed skill's folder `dir` against its lock entry: files changed, missing or added. */
export async function verifyOne(dir: string, name: string, entry: LockEntry): Promise<VerifyReport> {
  const report: VerifyReport = { name, ok: true, changed: [], missing: [], extra: [] };
  const info = await lstat(dir).catch(() => null);
  if (!info?.isDirectory()) {
    return { ...report, ok: false, missing: Object.keys(entry.files ?? {}), note: "the folder is gone" };
  }
  if (entry.files === undefined) {
    const digest = await readSkillFolder(dir, READ_BACK).then(skillDigest, (err: unknown) =>
      isSparError(err) ? "" : Promise.reject(err),
    );
    const same = digest === entry.sha256;
    return {
      ...report,
      ok: same,
      ...(same ? {} : { changed: ["(the folder as a whole)"] }),
      note: "installed by an older Spar, which kept no per-file hashes: only the whole folder is compared; install it again to record them",
    };
  }
  const { files, odd } = await listFolder(dir);
  for (const [path, hash] of Object.entries(entry.files)) {
    const now = files.get(path);
    if (now === undefined) {
      if (odd.includes(path)) report.changed.push(path);
      else report.missing.push(path);
    } else if (now !== hash) report.changed.push(path);
  }
  for (const path of [...files.keys(), ...odd]) {
    if (!Object.hasOwn(entry.files, path)) report.extra.push(path);
  }
  report.changed.sort();
  report.missing.sort();
  report.extra.sort();
  report.ok = report.changed.length + report.missing.length + report.extra.length === 0;
  return report;
}

/** Every regular file's sha256 by relative path, and what is neither a file nor a folder. */
async function listFolder(root: string): Promise<Listing> {
  const out: Listing = { files: new Map(), odd: [] };
  const walk = async (relative: string): Promise<void> => {
    for (const name of (await readdir(join(root, relative))).sort()) {
      const path = relative ? `${relative}/${name}` : name;
      const info = await lstat(join(root, path));
      if (info.isDirectory()) await walk(path);
      else if (info.isFile()) {
        out.files.set(
          path,
          createHash("sha256")
            .update(await readFile(join(root, path)))
            .digest("hex"),
        );
      } else out.odd.push(path);
    }
  };
  await walk("");
  return out;
}
