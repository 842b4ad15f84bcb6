/**
 * A zip archive read by hand from its central directory, with no dependency and no disk. Stored and
 * deflate entries only; no zip64, no split archives, no encryption. Every entry is checked (path,
 * kind, declared size, compression ratio) before anything is inflated; each one is then inflated
 * with an output cap of its declared size, so an entry that lies about its size stops there, and its
 * CRC-32 is checked. Entries whose bytes overlap (the trick of the overlapping-file zip bombs) are
 * refused. Folders under `__MACOSX/` (the resource forks macOS's Finder adds) are not skill content
 * and are left out.
 */
import { crc32, inflateRawSync } from "node:zlib";
import { FileCollector, refuse, type SkillFiles, type SkillLimits, shown, skillPath } from "./files.js";

const EOCD = 0x06054b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;
const ZIP64_LOCATOR = 0x07064b50;
/** Deflate at its best is about 1000:1; text compresses 3–10:1. Past this an entry is a bomb. */
export const MAX_RATIO = 100;
/** Tiny files compress absurdly well (a 2 KiB run of spaces), and cost nothing: the ratio rule starts here. */
const RATIO_FLOOR = 4096;

const corrupt = (message: string) => refuse("corrupt_archive", `the zip archive is damaged: ${message}`);

interface Planned {
  path: string;
  nameBytes: Buffer;
  method: number;
  crc: number;
  compressed: number;
  size: number;
  localOffset: number;
}

/** The skill's files in a zip, SKILL.md found at the root or inside one top folder (stripped). */
export function readZip(data: Buffer, limits: SkillLimits): SkillFiles {
  const end = findEnd(data);
  const disk = data.readUInt16LE(end + 4);
  const directoryDisk = data.readUInt16LE(end + 6);
  const onDisk = data.readUInt16LE(end + 8);
  const count = data.readUInt16LE(end + 10);
  const directorySize = data.readUInt32LE(end + 12);
  const directoryOffset = data.readUInt32LE(end + 16);
  const locator = end >= 20 && data.readUInt32LE(end - 20) === ZIP64_LOCATOR;
  if (locator || count === 0xffff || directorySize === 0xffffffff || directoryOffset === 0xffffffff) {
    throw refuse("unsupported_archive", "zip64 archives are not read (a skill is far smaller than 4 GiB)");
  }
  if (disk !== 0 || directoryDisk !== 0 || onDisk !== count) {
    throw refuse("unsupported_archive", "the zip archive spans several disks");
  }
  const directoryEnd = directoryOffset + directorySize;
  if (directoryEnd > end) throw corrupt("its central directory lies outside it");
  const collector = new FileCollector(limits);
  const planned: Planned[] = [];
  let at = directoryOffset;
  for (let n = 0; n < count; n++) {
    if (at + 46 > directoryEnd || data.readUInt32LE(at) !== CENTRAL) {
      throw corrupt(`central directory entry ${n + 1} of ${count} is missing`);
    }
    const nameLength = data.readUInt16LE(at + 28);
    const next = at + 46 + nameLength + data.readUInt16LE(at + 30) + data.readUInt16LE(at + 32);
    if (next > directoryEnd) throw corrupt(`central directory entry ${n + 1} runs past its end`);
    const entry = planEntry(data, at, nameLength, collector);
    if (entry) planned.push(entry);
    at = next;
  }
  const spans = planned.map((entry) => [entry, locate(data, entry, directoryOffset)] as const);
  checkNoOverlap(spans.map(([, span]) => span));
  for (const [entry, [, start]] of spans) {
    checkLocalHeader(data, entry);
    collector.put(entry.path, contentOf(data.subarray(start, start + entry.compressed), entry));
  }
  return collector.finish(true);
}

/** The end-of-central-directory record: the last one whose comment runs exactly to the end. */
function findEnd(data: Buffer): number {
  const lowest = Math.max(0, data.length - 22 - 0xffff);
  for (let i = data.length - 22; i >= lowest; i--) {
    if (data.readUInt32LE(i) === EOCD && i + 22 + data.readUInt16LE(i + 20) === data.length) return i;
  }
  throw corrupt("no end-of-central-directory record");
}

/** One central directory entry checked: its path, its kind, its flags, its sizes. */
function planEntry(
  data: Buffer,
  at: number,
  nameLength: number,
  collector: FileCollector,
): Planned | undefined {
  const madeBy = data.readUInt16LE(at + 4);
  const flags = data.readUInt16LE(at + 8);
  const method = data.readUInt16LE(at + 10);
  const compressed = data.readUInt32LE(at + 20);
  const size = data.readUInt32LE(at + 24);
  const external = data.readUInt32LE(at + 38);
  const nameBytes = data.subarray(at + 46, at + 46 + nameLength);
  const name = decodeName(nameBytes);
  // Every path is checked, even one left out: "__MACOSX/../../x" is refused, not skipped.
  if (skillPath(name).split("/")[0] === "__MACOSX") return undefined;
  const kind = entryKind(madeBy, external, name);
  if (kind === "folder") {
    collector.folder(name);
    return undefined;
  }
  skillPath(name);
  const quoted = JSON.stringify(shown(name));
  const only = "a skill holds regular files and folders only";
  if (kind === "symlink") throw refuse("symlink", `${quoted} is a symbolic link; ${only}`, name);
  if (kind === "special") throw refuse("special_file", `${quoted} is not a regular file; ${only}`, name);
  // Bit 0: encrypted; bit 6: strong encryption; method 99: AES.
  if (flags & 0x41 || method === 99) throw refuse("encrypted", `${quoted} is encrypted`, name);
  if (method !== 0 && method !== 8) {
    throw refuse(
      "unsupported_compression",
      `${quoted} is compressed with method ${method}; only stored (0) and deflate (8) are read`,
      name,
    );
  }
  if (compressed === 0xffffffff || size === 0xffffffff) {
    throw refuse("unsupported_archive", `${quoted} has zip64 sizes, which are not read`, name);
  }
  const path = collector.reserve(name, size);
  if (method === 0 && compressed !== size) throw corrupt(`${quoted} is stored, yet its two sizes differ`);
  if (size > RATIO_FLOOR && size > compressed * MAX_RATIO) {
    throw refuse(
      "zip_bomb",
      `${quoted} would inflate ${compressed} bytes to ${size} (more than ${MAX_RATIO}:1), as a zip bomb does`,
      name,
    );
  }
  return {
    path,
    nameBytes,
    method,
    crc: data.readUInt32LE(at + 16),
    compressed,
    size,
    localOffset: data.readUInt32LE(at + 42),
  };
}

/**
 * What an entry is. Unix zips (made by host 3, or 19 for macOS) carry the file mode in the high half
 * of the external attributes; otherwise a name ending in `/` or the MS-DOS folder bit means a folder.
 */
function entryKind(
  madeBy: number,
  external: number,
  name: string,
): "file" | "folder" | "symlink" | "special" {
  const host = madeBy >> 8;
  const type = (external >>> 16) & 0o170000;
  if ((host === 3 || host === 19) && type !== 0) {
    if (type === 0o120000) return "symlink";
    if (type === 0o040000) return "folder";
    if (type !== 0o100000) return "special";
  }
  return name.endsWith("/") || external & 0x10 ? "folder" : "file";
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Names are read as UTF-8 whether or not flag bit 11 says so (Info-ZIP writes UTF-8 without it). */
function decodeName(bytes: Buffer): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw refuse("bad_name", `a name in the zip archive is not UTF-8 (${bytes.toString("latin1")})`);
  }
}

/** Where an entry's local header starts, where its bytes start and end. */
function locate(data: Buffer, entry: Planned, directoryOffset: number): readonly [number, number, number] {
  const at = entry.localOffset;
  const quoted = JSON.stringify(shown(entry.path));
  if (at + 30 > directoryOffset || data.readUInt32LE(at) !== LOCAL)
    throw corrupt(`${quoted} has no local header`);
  const start = at + 30 + data.readUInt16LE(at + 26) + data.readUInt16LE(at + 28);
  if (start + entry.compressed > directoryOffset) throw corrupt(`${quoted} runs into the central directory`);
  return [at, start, start + entry.compressed];
}

/**
 * The local header must name the same file with the same method as the central directory: a reader
 * trusting one and a writer the other would disagree on what was checked.
 */
function checkLocalHeader(data: Buffer, entry: Planned): void {
  const at = entry.localOffset;
  const quoted = JSON.stringify(shown(entry.path));
  const nameLength = data.readUInt16LE(at + 26);
  if (!data.subarray(at + 30, at + 30 + nameLength).equals(entry.nameBytes)) {
    throw corrupt(`${quoted} has another name in its local header`);
  }
  if (data.readUInt16LE(at + 8) !== entry.method || data.readUInt16LE(at + 6) & 0x41) {
    throw corrupt(`${quoted}'s local header disagrees with the central directory`);
  }
}

function checkNoOverlap(spans: (readonly [number, number, number])[]): void {
  const sorted = [...spans].sort((a, b) => a[0] - b[0]);
  for (let i = 1; i < sorted.length; i++) {
    const [start] = sorted[i] as readonly [number, number, number];
    const [, , previousEnd] = sorted[i - 1] as readonly [number, number, number];
    if (start < previousEnd) {
      throw refuse(
        "overlapping_entries",
        "two entries of the zip archive share bytes, as overlapping zip bombs do",
      );
    }
  }
}

/** An entry's bytes: copied (stored) or inflated with its declared size as the cap; CRC-32 checked. */
function contentOf(raw: Buffer, entry: Planned): Buffer {
  const quoted = JSON.stringify(shown(entry.path));
  let content: Buffer;
  if (entry.method === 0) content = Buffer.from(raw);
  else {
    try {
      content = inflateRawSync(raw, { maxOutputLength: Math.max(entry.size, 1) });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE") {
        throw refuse("zip_bomb", `${quoted} inflates past its declared ${entry.size} bytes`, entry.path);
      }
      throw corrupt(`${quoted} does not inflate (${(err as Error).message})`);
    }
  }
  if (content.length > entry.size) {
    throw refuse("zip_bomb", `${quoted} inflates past its declared ${entry.size} bytes`, entry.path);
  }
  if (content.length !== entry.size) throw corrupt(`${quoted} is shorter than its declared size`);
  if (crc32(content) !== entry.crc) throw corrupt(`${quoted} fails its CRC-32`);
  return content;
}
