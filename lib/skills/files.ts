/**
 * A skill's files in memory, before they touch the disk: the path rules every source obeys (an
 * archive entry, a file in a local folder), the size and count limits, where SKILL.md must sit, and
 * the digest the lock file records. archive.ts, source.ts and installed.ts share these, so a path
 * refused in a .zip is refused the same way in a .tar.gz, a folder, or a direct installSkill call.
 *
 * Every refusal is a SparError whose `extra.reason` says which rule (stable, for tests and tools):
 * see REFUSALS.
 */
import { createHash } from "node:crypto";
import { type ErrorCode, SparError } from "../../sdk/errors.js";
import { MAX_SKILL_BYTES, SKILL_FILE } from "./skill.js";

/** A skill's files: the path relative to the skill's folder (`/`-separated) → the bytes. */
export type SkillFiles = Map<string, Buffer>;

/** What one skill may hold. */
export interface SkillLimits {
  /** Regular files (folders do not count). */
  readonly maxFiles: number;
  /** SKILL.md itself. */
  readonly maxSkillBytes: number;
  /** Every other file. */
  readonly maxFileBytes: number;
  /** All files together. */
  readonly maxTotalBytes: number;
}

/**
 * Sized for skills as their authors publish them: tens of scripts, references and assets, a few
 * MiB in all (README "Writing a skill"). SKILL.md stays small: it is what `skill_load` hands the
 * model whole (the standard recommends under 500 lines); the rest is read in pages (`skill_read`).
 */
export const DEFAULT_LIMITS: SkillLimits = Object.freeze({
  maxFiles: 256,
  maxSkillBytes: MAX_SKILL_BYTES,
  maxFileBytes: 4 * 1024 * 1024,
  maxTotalBytes: 16 * 1024 * 1024,
});

/** A byte count as the limits' messages say it: `4 MiB`, `64 KiB`, `1000 bytes`. */
export function sizeWords(bytes: number): string {
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}

/** The defaults, with the caller's overrides. */
export function skillLimits(overrides: Partial<SkillLimits> = {}): SkillLimits {
  return { ...DEFAULT_LIMITS, ...overrides };
}

/** Every refusal's `extra.reason`, with the error code it always comes with. */
export const REFUSALS = {
  path_traversal: "FORBIDDEN",
  absolute_path: "FORBIDDEN",
  backslash: "FORBIDDEN",
  drive_letter: "FORBIDDEN",
  symlink: "FORBIDDEN",
  hardlink: "FORBIDDEN",
  special_file: "FORBIDDEN",
  bad_name: "VALIDATION_FAILED",
  duplicate_path: "VALIDATION_FAILED",
  path_conflict: "VALIDATION_FAILED",
  missing_skill_md: "VALIDATION_FAILED",
  corrupt_archive: "VALIDATION_FAILED",
  overlapping_entries: "VALIDATION_FAILED",
  too_many_files: "PAYLOAD_TOO_LARGE",
  file_too_large: "PAYLOAD_TOO_LARGE",
  total_too_large: "PAYLOAD_TOO_LARGE",
  zip_bomb: "PAYLOAD_TOO_LARGE",
  download_too_large: "PAYLOAD_TOO_LARGE",
  encrypted: "UNSUPPORTED_MEDIA_TYPE",
  unsupported_compression: "UNSUPPORTED_MEDIA_TYPE",
  unsupported_archive: "UNSUPPORTED_MEDIA_TYPE",
  not_a_skill: "UNSUPPORTED_MEDIA_TYPE",
} as const satisfies Record<string, ErrorCode>;

export type RefusalReason = keyof typeof REFUSALS;

/** A refusal: the code that goes with `reason`, and the entry it is about (shortened) when there is one. */
export function refuse(reason: RefusalReason, message: string, entry?: string): SparError {
  return new SparError(REFUSALS[reason], message, {
    reason,
    ...(entry === undefined ? {} : { entry: shown(entry) }),
  });
}

/** A path as messages show it: at most 200 characters (messages quote it with JSON.stringify). */
export function shown(path: string): string {
  return path.length > 200 ? `${path.slice(0, 200)}…` : path;
}

const MAX_PATH_CHARS = 512;
const MAX_SEGMENT_BYTES = 255;
const MAX_DEPTH = 16;

/**
 * An entry's path made safe: `/`-separated, relative, without `.` or empty segments; trailing `/`
 * dropped. Refused: `..` anywhere (path_traversal), a leading `/` (absolute_path), `\` (backslash:
 * a separator on Windows), `C:` (drive_letter), control characters, segments over 255 bytes, paths
 * over 512 characters or 16 levels (bad_name). An empty result ("./") is the root itself.
 */
export function skillPath(raw: string): string {
  const quoted = JSON.stringify(shown(raw));
  if (raw.includes("\\")) {
    throw refuse("backslash", `${quoted} holds a backslash, a path separator on Windows`, raw);
  }
  if (/^[A-Za-z]:/.test(raw)) throw refuse("drive_letter", `${quoted} starts with a drive letter`, raw);
  if (raw.startsWith("/")) throw refuse("absolute_path", `${quoted} is an absolute path`, raw);
  // Refused before the traversal test, so "../\n" is named for what it holds.
  if (/\p{Cc}/u.test(raw)) throw refuse("bad_name", `${quoted} holds a control character`, raw);
  const segments = raw.split("/").filter((s) => s !== "" && s !== ".");
  if (segments.includes(".."))
    throw refuse("path_traversal", `${quoted} climbs out of the skill with ..`, raw);
  const path = segments.join("/");
  if (path.length > MAX_PATH_CHARS || segments.length > MAX_DEPTH) {
    throw refuse("bad_name", `${quoted} is longer or deeper than a skill's files may be`, raw);
  }
  if (segments.some((s) => Buffer.byteLength(s) > MAX_SEGMENT_BYTES)) {
    throw refuse("bad_name", `${quoted} has a name longer than ${MAX_SEGMENT_BYTES} bytes`, raw);
  }
  return path;
}

/** Two paths that one file system might take for the same one (macOS: case, Unicode form). */
const foldKey = (path: string) => path.normalize("NFC").toLowerCase();

/**
 * Gathers a skill's files one entry at a time, holding every limit as it goes, so an archive is
 * refused at the first entry too many (before the rest is unpacked). `reserve` checks an entry by
 * its path and size, `put` stores its bytes; `finish` finds SKILL.md and hands the files over.
 */
export class FileCollector {
  readonly #limits: SkillLimits;
  readonly #files = new Map<string, Buffer | undefined>();
  readonly #keys = new Map<string, string>();
  readonly #folders = new Set<string>();
  #total = 0;

  constructor(limits: SkillLimits) {
    this.#limits = limits;
  }

  /** Checks a file entry (path, count, size) before its bytes are read; returns its safe path. */
  reserve(raw: string, size: number): string {
    const path = skillPath(raw);
    if (path === "") throw refuse("bad_name", `${JSON.stringify(shown(raw))} is a file with no name`, raw);
    const key = foldKey(path);
    const earlier = this.#keys.get(key);
    if (earlier !== undefined) {
      const same = earlier === path ? "twice" : `twice (as ${JSON.stringify(shown(earlier))} too)`;
      throw refuse("duplicate_path", `${JSON.stringify(shown(path))} is in the skill ${same}`, raw);
    }
    if (this.#files.size >= this.#limits.maxFiles) {
      throw refuse("too_many_files", `the skill holds more than ${this.#limits.maxFiles} files`, raw);
    }
    // Which file is the root SKILL.md is known only at the end: every file may be as large as either cap.
    const cap = Math.max(this.#limits.maxFileBytes, this.#limits.maxSkillBytes);
    if (size > cap) {
      throw refuse(
        "file_too_large",
        `${JSON.stringify(shown(path))} is ${size} bytes; the cap is ${cap}`,
        raw,
      );
    }
    if (this.#total + size > this.#limits.maxTotalBytes) {
      throw refuse(
        "total_too_large",
        `the skill's files come to more than ${this.#limits.maxTotalBytes} bytes`,
        raw,
      );
    }
    this.#total += size;
    this.#keys.set(key, path);
    this.#files.set(path, undefined);
    return path;
  }

  /** A file's bytes, for a path `reserve` returned; their length must be what was reserved. */
  put(path: string, content: Buffer): void {
    this.#files.set(path, content);
  }

  /** A folder entry: its path is checked like a file's; nothing else is kept but the name. */
  folder(raw: string): void {
    const path = skillPath(raw);
    if (path !== "") this.#folders.add(foldKey(path));
  }

  /**
   * The files, rooted where SKILL.md is: at the top, or (`stripOneFolder`, for archives) inside
   * exactly one top folder that holds everything, which is then dropped from every path
   * (`my-skill/SKILL.md` → `SKILL.md`), since that is how `tar czf x.tgz my-skill/` packs one.
   */
  finish(stripOneFolder: boolean): SkillFiles {
    const files = new Map<string, Buffer>();
    for (const [path, content] of this.#files) {
      if (content === undefined) throw new Error(`internal: ${path} was reserved but never read`);
      files.set(path, content);
    }
    this.#checkShapes();
    return rooted(files, stripOneFolder, this.#limits);
  }

  /** A path cannot be a file and a folder at once (`a` and `a/b`): unpacked, one would overwrite the other. */
  #checkShapes(): void {
    const fileKeys = new Set(this.#keys.keys());
    for (const [key, path] of this.#keys) {
      const parts = key.split("/");
      for (let i = 1; i < parts.length; i++) {
        const parent = parts.slice(0, i).join("/");
        if (fileKeys.has(parent)) {
          throw refuse(
            "path_conflict",
            `${JSON.stringify(shown(path))} sits inside ${JSON.stringify(parent)}, which is a file`,
            path,
          );
        }
      }
      if (this.#folders.has(key)) {
        throw refuse("path_conflict", `${JSON.stringify(shown(path))} is both a file and a folder`, path);
      }
    }
  }
}

function rooted(files: SkillFiles, stripOneFolder: boolean, limits: SkillLimits): SkillFiles {
  let out = files;
  if (!files.has(SKILL_FILE) && stripOneFolder) {
    const tops = new Set([...files.keys()].map((p) => p.split("/")[0]));
    const [top] = tops;
    const nested = [...files.keys()].every((p) => p.includes("/"));
    if (tops.size === 1 && nested && top !== undefined && files.has(`${top}/${SKILL_FILE}`)) {
      out = new Map([...files].map(([p, content]) => [p.slice(top.length + 1), content]));
    }
  }
  const skill = out.get(SKILL_FILE);
  if (!skill) {
    throw refuse(
      "missing_skill_md",
      stripOneFolder
        ? `no ${SKILL_FILE} at the archive's root, nor inside one top folder holding everything`
        : `no ${SKILL_FILE} at the skill's root`,
    );
  }
  if (skill.length > limits.maxSkillBytes) {
    throw refuse(
      "file_too_large",
      `${SKILL_FILE} is ${skill.length} bytes; the cap is ${limits.maxSkillBytes}`,
      SKILL_FILE,
    );
  }
  return out;
}

/**
 * Checks files that arrive already in memory (installSkill's input) by the same rules as an
 * archive: every path already in its safe form, the limits, SKILL.md at the root.
 */
export function checkSkillFiles(files: SkillFiles, limits: SkillLimits): void {
  const collector = new FileCollector(limits);
  for (const [raw, content] of files) {
    const path = collector.reserve(raw, content.length);
    if (path !== raw) {
      throw refuse(
        "bad_name",
        `${JSON.stringify(shown(raw))} is not written as ${JSON.stringify(path)}`,
        raw,
      );
    }
    collector.put(path, content);
  }
  collector.finish(false);
}

/**
 * The sha256 the lock file records: of a canonical listing, one line per file in byte order of the
 * UTF-8 path, `<sha256 of the content>  <path>\n` (the `sha256sum` format). Independent of the order
 * files arrived in, and changed by any content, name or file added or taken away.
 *
 * @example
 * skillDigest(new Map([["SKILL.md", Buffer.from("---\n…")]])); // "3b0c…"
 */
export function skillDigest(files: SkillFiles): string {
  const listing = [...files]
    .map(([path, content]) => [Buffer.from(path), content] as const)
    .sort(([a], [b]) => Buffer.compare(a, b))
    .map(([path, content]) => `${createHash("sha256").update(content).digest("hex")}  ${path.toString()}\n`)
    .join("");
  return createHash("sha256").update(listing).digest("hex");
}
