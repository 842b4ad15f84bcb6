/**
 * The lock file of the installed set, `<data dir>/skills/skills.lock.json`:
 *
 * ```json
 * {"version":2,"skills":{"<name>":{"source":"github:acme/skills/skills/x@main","ref":"main",
 *   "resolved":"<commit id or final URL>","path":"skills/x","version":"…","sha256":"…",
 *   "files":{"SKILL.md":"<sha256>","scripts/run.py":"<sha256>"},"installed_at":"…","forced":false,
 *   "findings":[{"rule":"…","severity":"high","file":"SKILL.md","line":3,"message":"…"}]}}}
 * ```
 *
 * Read strictly (a key it does not know is damage: STORE_FAILED naming the file and the key's
 * path) and written in one fixed form (skills by name, keys in order, two-space JSON, a newline), so
 * the same set always gives the same bytes. installed.ts changes it; this file only reads and writes
 * its text.
 *
 * Version 2 added `ref`, `resolved`, `path` and `files` (each optional: an entry installed before
 * them has none, and a source with no ref or commit has none of those). A version 1 lock is read as
 * it is (its entries simply lack them) and written back as version 2 on the next change. The number
 * went up, rather than the fields being slipped into version 1, so that an older Spar meeting the new
 * lock (a downgrade) says "/version must be 1" instead of calling a new field damage.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { SparError } from "../../sdk/errors.js";
import { SKILL_NAME } from "./skill.js";

export const SKILLS_DIR = "skills";
export const LOCK_FILE = "skills.lock.json";

/** A scanner finding kept in the lock (high and medium only). */
export interface LockFinding {
  rule: string;
  severity: "high" | "medium";
  file: string;
  line?: number;
  message?: string;
}

/** One skill in the lock file. */
export interface LockEntry {
  /** Where it came from: `github:owner/repo[/path][@ref]`, a URL, `local:<path>`, "upload". */
  source: string;
  /** The ref asked for (a branch, tag or commit), when the source has one. */
  ref?: string;
  /** What the source resolved to: the commit id of a git archive, or the URL the download ended at. */
  resolved?: string;
  /** The skill's folder inside the repository or archive, when it is not the root. */
  path?: string;
  /** SKILL.md's `version`. */
  version: string;
  /** skillDigest of its files. */
  sha256: string;
  /** Every file's sha256, by path inside the skill's folder. */
  files?: Record<string, string>;
  /** ISO 8601. */
  installed_at: string;
  /** Installed over high-severity findings. */
  forced: boolean;
  findings: LockFinding[];
}

/** The version this Spar writes; it reads 1 too. */
export const LOCK_VERSION = 2;

export interface LockFile {
  version: 1 | 2;
  skills: Record<string, LockEntry>;
}

/** A finding as the scanner gives it; only high and medium ones are kept. */
export interface FindingInput {
  rule: string;
  severity: string;
  file: string;
  line?: number;
  message?: string;
}

/** The lock file, checked; an absent one is the empty set. A damaged one is STORE_FAILED. */
export async function readLock(home: string): Promise<LockFile> {
  const file = join(home, SKILLS_DIR, LOCK_FILE);
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return { version: LOCK_VERSION, skills: {} };
    throw new SparError(
      "STORE_FAILED",
      `could not read ${file}: ${(err as Error).message}`,
      { file },
      { cause: err },
    );
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw new SparError("STORE_FAILED", `${file} is not valid JSON (${(err as Error).message})`, { file });
  }
  return checkLock(data, file);
}

/** The lock's bytes: skills by name, keys in a fixed order, so equal sets give equal files. */
export function lockText(lock: LockFile): string {
  const skills: Record<string, LockEntry> = {};
  for (const name of Object.keys(lock.skills).sort()) {
    const e = lock.skills[name] as LockEntry;
    skills[name] = {
      source: e.source,
      ...(e.ref === undefined ? {} : { ref: e.ref }),
      ...(e.resolved === undefined ? {} : { resolved: e.resolved }),
      ...(e.path === undefined ? {} : { path: e.path }),
      version: e.version,
      sha256: e.sha256,
      ...(e.files === undefined ? {} : { files: sortedFiles(e.files) }),
      installed_at: e.installed_at,
      forced: e.forced,
      findings: e.findings.map((f) => ({
        rule: f.rule,
        severity: f.severity,
        file: f.file,
        ...(f.line === undefined ? {} : { line: f.line }),
        ...(f.message === undefined ? {} : { message: f.message }),
      })),
    };
  }
  return `${JSON.stringify({ version: LOCK_VERSION, skills }, null, 2)}\n`;
}

/** Paths in byte order of their UTF-8, as skillDigest lists them. */
function sortedFiles(files: Record<string, string>): Record<string, string> {
  const paths = Object.keys(files).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  return Object.fromEntries(paths.map((p) => [p, files[p] as string]));
}

/** The high and medium findings, in the lock's shape. */
export function keptFindings(findings: readonly FindingInput[]): LockFinding[] {
  return findings
    .filter(
      (f): f is typeof f & { severity: "high" | "medium" } =>
        f.severity === "high" || f.severity === "medium",
    )
    .map((f) => ({
      rule: f.rule,
      severity: f.severity,
      file: f.file,
      ...(f.line === undefined ? {} : { line: f.line }),
      ...(f.message === undefined ? {} : { message: f.message }),
    }));
}

const ENTRY_KEYS = [
  "source",
  "ref",
  "resolved",
  "path",
  "version",
  "sha256",
  "files",
  "installed_at",
  "forced",
  "findings",
];
const HEX64 = /^[0-9a-f]{64}$/;
const FINDING_KEYS = new Set(["rule", "severity", "file", "line", "message"]);

/** The lock's shape, strictly: a key it does not know is damage, not something to skip. */
function checkLock(data: unknown, file: string): LockFile {
  const bad = (where: string, what: string) =>
    new SparError("STORE_FAILED", `${file}: ${where} ${what}`, { file, path: where });
  const isObject = (v: unknown): v is Record<string, unknown> =>
    typeof v === "object" && v !== null && !Array.isArray(v);
  if (!isObject(data)) throw bad("/", "must be an object");
  for (const key of Object.keys(data))
    if (key !== "version" && key !== "skills") throw bad(`/${key}`, "is unknown");
  if (data.version !== 1 && data.version !== LOCK_VERSION)
    throw bad("/version", `must be 1 or ${LOCK_VERSION}`);
  if (!isObject(data.skills)) throw bad("/skills", "must be an object");
  for (const [name, entry] of Object.entries(data.skills)) {
    const at = `/skills/${name}`;
    if (!SKILL_NAME.test(name)) throw bad(at, "is not a skill name");
    if (!isObject(entry)) throw bad(at, "must be an object");
    for (const key of Object.keys(entry))
      if (!ENTRY_KEYS.includes(key)) throw bad(`${at}/${key}`, "is unknown");
    for (const key of ["source", "version", "installed_at"]) {
      if (typeof entry[key] !== "string") throw bad(`${at}/${key}`, "must be a string");
    }
    for (const key of ["ref", "resolved", "path"]) {
      if (entry[key] !== undefined && (typeof entry[key] !== "string" || entry[key] === "")) {
        throw bad(`${at}/${key}`, "must be a non-empty string");
      }
    }
    if (typeof entry.sha256 !== "string" || !HEX64.test(entry.sha256)) {
      throw bad(`${at}/sha256`, "must be 64 hex digits");
    }
    if (entry.files !== undefined) {
      if (!isObject(entry.files)) throw bad(`${at}/files`, "must be an object of path → sha256");
      for (const [path, hash] of Object.entries(entry.files)) {
        if (typeof hash !== "string" || !HEX64.test(hash)) {
          throw bad(
            `${at}/files/${path.replaceAll("~", "~0").replaceAll("/", "~1")}`,
            "must be 64 hex digits",
          );
        }
      }
    }
    if (typeof entry.forced !== "boolean") throw bad(`${at}/forced`, "must be true or false");
    if (!Array.isArray(entry.findings)) throw bad(`${at}/findings`, "must be a list");
    entry.findings.forEach((f: unknown, i) => {
      const where = `${at}/findings/${i}`;
      if (!isObject(f) || Object.keys(f).some((k) => !FINDING_KEYS.has(k)))
        throw bad(where, "is not a finding");
      const textual = ["rule", "file"].every((k) => typeof f[k] === "string");
      const severity = f.severity === "high" || f.severity === "medium";
      const line = f.line === undefined || Number.isInteger(f.line);
      const message = f.message === undefined || typeof f.message === "string";
      if (!textual || !severity || !line || !message) throw bad(where, "is not a finding");
    });
  }
  return data as unknown as LockFile;
}
