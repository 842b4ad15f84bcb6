/**
 * A skill's files beside SKILL.md, as the model reaches them (progressive disclosure): `skill_load`
 * lists them (path, size, kind), `skill_read` reads one in pages of characters. Paths obey the
 * install rules (files.ts `skillPath`: no `..`, no absolute path, no backslash), then every step of
 * the path is looked at on disk: a symlink anywhere is refused (an installed skill never holds one:
 * one found there was put there afterwards), and the real path must stay inside the skill's folder.
 * A binary file gives its size and media type, never its bytes.
 */
import type { Dirent } from "node:fs";
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  openSync,
  readdirSync,
  readSync,
  realpathSync,
} from "node:fs";
import { extname, join, sep } from "node:path";
import { SparError } from "../../sdk/errors.js";
import { DEFAULT_LIMITS, skillPath } from "./files.js";
import { SKILL_FILE } from "./skill.js";

/** What a file is for, by its top folder (the Agent Skills layout); `other` for anything else. */
export type SkillFileKind = "script" | "reference" | "asset" | "other";

/** One file of a skill, as `skill_load` lists it. */
export interface SkillFileEntry {
  /** Relative to the skill's folder, `/`-separated. */
  path: string;
  size: number;
  kind: SkillFileKind;
}

const KINDS: Record<string, SkillFileKind> = {
  scripts: "script",
  references: "reference",
  assets: "asset",
};

/** The folder a skill's scripts sit in: only a skill holding one is mounted in the sandbox. */
export const SCRIPTS_FOLDER = "scripts";

/** A page's size when the model does not say, and the most it may ask for (characters). */
export const READ_DEFAULT_CHARS = 16_000;
/** The most characters one `skill_read` page may ask for. */
export const READ_MAX_CHARS = 32_000;

/**
 * The skill's regular files but its root SKILL.md, sorted by path, at most `max` (the install
 * limit): dot files, symlinks and anything not a file or folder are left out.
 */
export function skillFileList(dir: string, max: number = DEFAULT_LIMITS.maxFiles): SkillFileEntry[] {
  const found: SkillFileEntry[] = [];
  const walk = (folder: string, prefix: string, depth: number) => {
    let entries: Dirent[];
    try {
      entries = readdirSync(folder, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
      if (found.length >= max || entry.name.startsWith(".")) continue;
      const path = prefix === "" ? entry.name : `${prefix}/${entry.name}`;
      if (entry.isDirectory() && depth < 16) walk(join(folder, entry.name), path, depth + 1);
      else if (entry.isFile() && path !== SKILL_FILE) {
        const top = path.includes("/") ? (path.split("/")[0] as string) : "";
        const size = sizeOf(join(folder, entry.name));
        if (size !== undefined) found.push({ path, size, kind: KINDS[top] ?? "other" });
      }
    }
  };
  walk(dir, "", 0);
  return found.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

function sizeOf(path: string): number | undefined {
  try {
    return lstatSync(path).size;
  } catch {
    return undefined;
  }
}

/** Whether the skill has a `scripts/` folder of its own (not a symlink): what the sandbox mounts. */
export function hasScripts(dir: string): boolean {
  try {
    return lstatSync(join(dir, SCRIPTS_FOLDER)).isDirectory();
  } catch {
    return false;
  }
}

/** One page of a text file, or what a binary one is. */
export type SkillPage =
  | {
      path: string;
      media_type: string;
      text: string;
      offset: number;
      /** Where the next page starts; null when this one reaches the end. */
      next_offset: number | null;
      total_chars: number;
    }
  | { path: string; media_type: string; binary: true; size: number; note: string };

const invalid = (message: string, reason: string) => new SparError("VALIDATION_FAILED", message, { reason });

/**
 * Reads `raw` (relative to the skill's folder `dir`) from character `offset`, at most `limit`
 * characters (UTF-16 code units, as JavaScript strings count them; a page never splits a surrogate
 * pair). VALIDATION_FAILED (with `extra.reason`) for a bad path, a symlink, a folder, an offset past
 * the end; NOT_FOUND for a file that is not there; PAYLOAD_TOO_LARGE past the install limit.
 *
 * @example
 * readSkillPage(skill.dir, "references/api.md", 0, 16_000); // { text, offset: 0, next_offset: 16000, … }
 */
export function readSkillPage(dir: string, raw: string, offset: number, limit: number): SkillPage {
  const path = checkedPath(raw);
  if (!Number.isInteger(offset) || offset < 0) {
    throw invalid(`offset must be a whole number of characters, 0 or more, not ${offset}`, "bad_offset");
  }
  if (!Number.isInteger(limit) || limit < 1 || limit > READ_MAX_CHARS) {
    throw invalid(`limit must be a whole number from 1 to ${READ_MAX_CHARS}, not ${limit}`, "bad_limit");
  }
  const bytes = readConfined(dir, path);
  const media_type = mediaType(path);
  const text = decoded(bytes);
  if (text === undefined) {
    return {
      path,
      media_type: media_type.startsWith("text/") ? "application/octet-stream" : media_type,
      binary: true,
      size: bytes.length,
      note: "a binary file: its bytes are not shown, only its size and media type",
    };
  }
  if (offset > text.length) {
    throw invalid(
      `offset ${offset} is past the end of ${JSON.stringify(path)} (${text.length} characters)`,
      "bad_offset",
    );
  }
  let end = Math.min(offset + limit, text.length);
  // A pair of UTF-16 halves (an emoji) stays whole: the page ends before it.
  if (end < text.length && end - offset > 1 && isHighSurrogate(text.charCodeAt(end - 1))) end -= 1;
  return {
    path,
    media_type,
    text: text.slice(offset, end),
    offset,
    next_offset: end < text.length ? end : null,
    total_chars: text.length,
  };
}

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;

/** The path by the install rules, refusals made VALIDATION_FAILED (the model's input, not an archive). */
function checkedPath(raw: string): string {
  let path: string;
  try {
    path = skillPath(raw);
  } catch (err) {
    if (!(err instanceof SparError)) throw err;
    throw invalid(
      `${err.message}: give a path inside the skill's folder, like references/guide.md`,
      String(err.extra?.reason ?? "bad_name"),
    );
  }
  if (path === "")
    throw invalid("give a file's path inside the skill's folder, like references/guide.md", "bad_name");
  return path;
}

/**
 * The file's bytes, when every step of its path is a real folder or file inside `dir` (lstat, then
 * the real path, then the file opened without following a link and checked to be the one looked at).
 */
function readConfined(dir: string, path: string): Buffer {
  const quoted = JSON.stringify(path);
  let here = dir;
  const parts = path.split("/");
  for (const [i, part] of parts.entries()) {
    here = join(here, part);
    let stat: ReturnType<typeof lstatSync>;
    try {
      stat = lstatSync(here);
    } catch {
      throw new SparError("NOT_FOUND", `the skill has no file ${quoted}: skill_load lists its files`);
    }
    if (stat.isSymbolicLink()) {
      throw invalid(`${quoted} goes through a symbolic link, which a skill's files may not hold`, "symlink");
    }
    const last = i === parts.length - 1;
    if (!last && !stat.isDirectory()) {
      throw new SparError("NOT_FOUND", `the skill has no file ${quoted}: skill_load lists its files`);
    }
    if (last && stat.isDirectory()) {
      throw invalid(`${quoted} is a folder: skill_load lists the files in it`, "folder");
    }
    if (last && !stat.isFile()) throw invalid(`${quoted} is not a regular file`, "special_file");
  }
  const root = realpathSync(dir);
  const real = realpathSync(here);
  if (!real.startsWith(root + sep)) {
    throw invalid(`${quoted} is not inside the skill's folder`, "path_traversal");
  }
  const fd = openSync(real, constants.O_RDONLY | constants.O_NOFOLLOW | (constants.O_NONBLOCK ?? 0));
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw invalid(`${quoted} is not a regular file`, "special_file");
    const cap = path === SKILL_FILE ? DEFAULT_LIMITS.maxSkillBytes : DEFAULT_LIMITS.maxFileBytes;
    if (stat.size > cap) {
      throw new SparError(
        "PAYLOAD_TOO_LARGE",
        `${quoted} is ${stat.size} bytes, over the ${cap} a skill's file may have`,
      );
    }
    const bytes = Buffer.alloc(stat.size);
    let read = 0;
    while (read < bytes.length) {
      const n = readSync(fd, bytes, read, bytes.length - read, read);
      if (n === 0) break;
      read += n;
    }
    return bytes.subarray(0, read);
  } finally {
    closeSync(fd);
  }
}

/** The text of UTF-8 bytes without NUL (a leading byte-order mark dropped), or undefined: binary. */
function decoded(bytes: Buffer): string | undefined {
  if (bytes.includes(0)) return undefined;
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    return undefined;
  }
}

const MEDIA: Record<string, string> = {
  ".md": "text/markdown",
  ".markdown": "text/markdown",
  ".txt": "text/plain",
  ".csv": "text/csv",
  ".tsv": "text/tab-separated-values",
  ".html": "text/html",
  ".htm": "text/html",
  ".css": "text/css",
  ".xml": "application/xml",
  ".json": "application/json",
  ".yaml": "application/yaml",
  ".yml": "application/yaml",
  ".toml": "application/toml",
  ".js": "text/javascript",
  ".mjs": "text/javascript",
  ".ts": "text/x-typescript",
  ".py": "text/x-python",
  ".sh": "text/x-shellscript",
  ".rb": "text/x-ruby",
  ".sql": "application/sql",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
  ".ico": "image/vnd.microsoft.icon",
  ".pdf": "application/pdf",
  ".zip": "application/zip",
  ".gz": "application/gzip",
  ".woff": "font/woff",
  ".woff2": "font/woff2",
  ".ttf": "font/ttf",
  ".otf": "font/otf",
  ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  ".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
};

/** A file's media type by its name (text/plain when unknown; a binary file's is corrected by the caller). */
export function mediaType(path: string): string {
  return MEDIA[extname(path).toLowerCase()] ?? "text/plain";
}
