/**
 * Archives and skill folders for the skill installer's tests: real ones made by the system's `tar`
 * and `zip`, and byte-exact ones written here for what those tools will not make (devices, `..` in
 * a pax header, lying zip sizes, overlapping entries, other compression methods).
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { crc32, deflateRawSync } from "node:zlib";
import { isSparError } from "../../sdk/errors.js";

/** A valid SKILL.md for `name`, padded with `body`. */
export function skillMd(
  name = "demo-skill",
  body = "# Demo\n\nSteps for the demo.\n",
  version = "1.0.0",
): string {
  return [
    "---",
    `name: ${name}`,
    "description: A skill the installer tests install.",
    `version: ${version}`,
    "category: testing",
    "tags: [demo]",
    "moves: []",
    "capabilities: []",
    "---",
    body,
  ].join("\n");
}

/** A fresh temporary folder, and a way to remove it. */
export function tempDir(prefix = "spar-skills-"): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Writes `files` (path → content) under `root`, making folders as needed. */
export function writeFiles(root: string, files: Record<string, string | Buffer>): void {
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), content);
  }
}

/** Runs a system tool (tar, zip) in `cwd`; its output is the archive written there. */
export function run(cwd: string, command: string, args: string[]): void {
  execFileSync(command, args, { cwd, stdio: ["ignore", "ignore", "pipe"] });
}

/** The refusal a call makes: its code, `extra.reason` and message. Fails the test if it succeeds. */
export async function refusal(
  work: () => unknown,
): Promise<{ code: string; reason: unknown; message: string; extra: Record<string, unknown> }> {
  try {
    await work();
  } catch (err) {
    if (isSparError(err))
      return { code: err.code, reason: err.extra.reason, message: err.message, extra: err.extra };
    throw err;
  }
  throw new Error("expected a refusal");
}

export interface TarEntry {
  name: string;
  /** "0" file (default), "5" folder, "1" hard link, "2" symlink, "3"/"4" devices, "6" FIFO, "x" pax, "L" GNU long name. */
  type?: string;
  body?: string | Buffer;
  linkname?: string;
  /** POSIX ustar prefix field. */
  prefix?: string;
  /** Spoil the checksum. */
  badChecksum?: boolean;
}

function field(header: Buffer, at: number, length: number, value: string): void {
  Buffer.from(value, "utf8").copy(header, at, 0, length);
}

const octal = (n: number, length: number) => `${n.toString(8).padStart(length - 1, "0")}\0`;

/** One 512-byte POSIX ustar header. */
export function tarHeader(entry: TarEntry, size: number): Buffer {
  const header = Buffer.alloc(512);
  field(header, 0, 100, entry.name);
  field(header, 100, 8, octal(entry.type === "5" ? 0o755 : 0o644, 8));
  field(header, 108, 8, octal(0, 8));
  field(header, 116, 8, octal(0, 8));
  field(header, 124, 12, octal(size, 12));
  field(header, 136, 12, octal(1_700_000_000, 12));
  header.fill(0x20, 148, 156);
  field(header, 156, 1, entry.type ?? "0");
  field(header, 157, 100, entry.linkname ?? "");
  field(header, 257, 6, "ustar\0");
  field(header, 263, 2, "00");
  field(header, 345, 155, entry.prefix ?? "");
  let sum = 0;
  for (const b of header) sum += b;
  field(header, 148, 8, `${(sum + (entry.badChecksum ? 1 : 0)).toString(8).padStart(6, "0")}\0 `);
  return header;
}

/** A tar archive of these entries, with its two zero end blocks. */
export function makeTar(entries: TarEntry[]): Buffer {
  const parts: Buffer[] = [];
  for (const entry of entries) {
    const body = Buffer.from(entry.body ?? "");
    parts.push(tarHeader(entry, body.length), body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  parts.push(Buffer.alloc(1024));
  return Buffer.concat(parts);
}

/** A pax extended header's body: `<length> key=value\n` records. */
export function paxRecords(records: Record<string, string>): Buffer {
  const lines = Object.entries(records).map(([key, value]) => {
    const rest = ` ${key}=${value}\n`;
    let length = Buffer.byteLength(rest) + 1;
    while (String(length).length + Buffer.byteLength(rest) !== length) length++;
    return `${length}${rest}`;
  });
  return Buffer.from(lines.join(""));
}

export interface ZipEntry {
  name: string;
  data?: string | Buffer;
  /** 0 stored, 8 deflate (default), or another number written as is (its data stored). */
  method?: number;
  flags?: number;
  /** Unix mode (e.g. 0o120777 for a symlink): written with "made by" Unix. */
  mode?: number;
  /** The uncompressed size written in both headers, instead of the real one. */
  declaredSize?: number;
  crc?: number;
  /** Point the central directory at the data of an earlier entry (overlap). */
  sameDataAs?: number;
}

/** A zip archive written byte by byte: local headers and data, the central directory, its end. */
export function makeZip(entries: ZipEntry[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  const offsets: number[] = [];
  let offset = 0;
  entries.forEach((entry, i) => {
    const raw = Buffer.from(entry.data ?? "");
    const method = entry.method ?? 8;
    const packed = method === 8 ? deflateRawSync(raw) : raw;
    const name = Buffer.from(entry.name);
    const crc = entry.crc ?? crc32(raw);
    const size = entry.declaredSize ?? raw.length;
    const flags = (entry.flags ?? 0) | 0x800;
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(flags, 6);
    local.writeUInt16LE(method, 8);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(packed.length, 18);
    local.writeUInt32LE(size, 22);
    local.writeUInt16LE(name.length, 26);
    const own = offset;
    if (entry.sameDataAs === undefined) {
      locals.push(local, name, packed);
      offset += local.length + name.length + packed.length;
    }
    offsets.push(entry.sameDataAs === undefined ? own : (offsets[entry.sameDataAs] as number));
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(entry.mode === undefined ? 20 : (3 << 8) | 20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(flags, 8);
    central.writeUInt16LE(method, 10);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(packed.length, 20);
    central.writeUInt32LE(size, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(entry.mode === undefined ? 0 : (entry.mode << 16) >>> 0, 38);
    central.writeUInt32LE(offsets[i] as number, 42);
    centrals.push(central, name);
  });
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

/** Rewrites a zip's declared uncompressed size for its first entry, in both headers (a lying bomb). */
export function lieAboutSize(zip: Buffer, size: number): Buffer {
  const out = Buffer.from(zip);
  out.writeUInt32LE(size, 22);
  const central = out.indexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]));
  out.writeUInt32LE(size, central + 24);
  return out;
}

/** A file's bytes. */
export const bytes = (path: string) => readFileSync(path);
