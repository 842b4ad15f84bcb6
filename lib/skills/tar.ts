/**
 * A tar archive read by hand (POSIX ustar, pax extended headers, GNU long names), with no dependency
 * and no disk: every entry is checked before its bytes are kept. Only regular files and folders are
 * accepted; links, devices, FIFOs and every other entry type are refused. The gzip around a .tar.gz
 * is undone with an output cap, so a gzip bomb stops at the cap.
 */
import { gunzipSync } from "node:zlib";
import { FileCollector, refuse, type SkillFiles, type SkillLimits, shown, skillPath } from "./files.js";

const BLOCK = 512;
/** Room for tar's own bytes beside the files: headers, padding, pax records, GNU tar's 10 KiB records. */
const TAR_OVERHEAD = 512 * 1024;
/** A pax header or GNU long name larger than this is no honest archive's. */
const MAX_META_BYTES = 64 * 1024;

/** The most a (decompressed) tar may weigh under these limits. */
export function tarCap(limits: SkillLimits): number {
  return limits.maxTotalBytes + TAR_OVERHEAD;
}

/** The tar inside a .tar.gz, at most tarCap bytes of it: past that, total_too_large. */
export function gunzipCapped(data: Buffer, limits: SkillLimits): Buffer {
  const cap = tarCap(limits);
  try {
    return gunzipSync(data, { maxOutputLength: cap });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE") {
      throw refuse("total_too_large", `the .tar.gz unpacks to more than ${cap} bytes`);
    }
    throw refuse("corrupt_archive", `the .tar.gz is not valid gzip (${(err as Error).message})`);
  }
}

const corrupt = (message: string) => refuse("corrupt_archive", `the tar archive is damaged: ${message}`);

/** What pax headers and GNU long-name entries say about the entry after them. */
interface Pending {
  path?: string;
  linkpath?: string;
  size?: number;
}

/** One tar entry as its headers describe it: type flag, path, link target, bytes. */
export interface TarEntry {
  type: string;
  name: string;
  link: string;
  body: Buffer;
}

/** The skill's files in a tar, SKILL.md found at the root or inside one top folder (stripped). */
export function readTar(tar: Buffer, limits: SkillLimits): SkillFiles {
  if (tar.length > tarCap(limits)) {
    throw refuse("total_too_large", `the tar archive is larger than ${tarCap(limits)} bytes`);
  }
  const collector = new FileCollector(limits);
  walkTar(tar, (entry) => addEntry(collector, entry));
  return collector.finish(true);
}

/**
 * Every entry of a tar, in order, handed to `onEntry` with its pax and GNU long names applied; the
 * end blocks stop the walk. Returns what the archive's global pax header says: `git archive` writes
 * the commit it packed as its `comment` (`git get-tar-commit-id` reads it back), and so do the
 * tarballs GitHub and other git hosts serve.
 */
export function walkTar(tar: Buffer, onEntry: (entry: TarEntry) => void): { comment?: string } {
  const global: { comment?: string } = {};
  let pending: Pending = {};
  let offset = 0;
  for (; offset + BLOCK <= tar.length; ) {
    const header = tar.subarray(offset, offset + BLOCK);
    // The end: two zero blocks (and GNU tar's padding) follow; nothing after them is read.
    if (header.every((b) => b === 0)) return global;
    checkChecksum(header, offset);
    const type = String.fromCharCode(header[156] ?? 0);
    const meta = type === "x" || type === "g" || type === "L" || type === "K";
    const size = meta ? readNumber(header, 124, 12) : (pending.size ?? readNumber(header, 124, 12));
    const start = offset + BLOCK;
    if (start + size > tar.length) throw corrupt(`the entry at byte ${offset} runs past the end`);
    const body = tar.subarray(start, start + size);
    offset = start + Math.ceil(size / BLOCK) * BLOCK;
    if (meta) {
      if (size > MAX_META_BYTES) throw corrupt(`a ${size}-byte extended header`);
      if (type === "x") pending = { ...pending, ...parsePax(body) };
      else if (type === "L") pending.path = text(body);
      else if (type === "K") pending.linkpath = text(body);
      // "g", a global pax header, says nothing about one entry; its comment is the commit, if any.
      else if (type === "g") {
        const comment = parsePax(body).comment;
        if (comment !== undefined) global.comment = comment;
      }
      continue;
    }
    const name = pending.path ?? headerName(header);
    const link = pending.linkpath ?? text(header.subarray(157, 257));
    pending = {};
    onEntry({ type, name, link, body });
  }
  if (offset < tar.length && !tar.subarray(offset).every((b) => b === 0)) {
    throw corrupt("it ends in the middle of a block");
  }
  // No end blocks: some writers leave them out; what was read is whole.
  return global;
}

const KINDS: Record<string, string> = {
  "3": "a character device",
  "4": "a block device",
  "6": "a FIFO (named pipe)",
};

/** A tar entry into a skill's files: a folder, a regular file, or a refusal for anything else. */
export function addEntry(collector: FileCollector, { type, name, link, body }: TarEntry): void {
  // Old (V7) tars mark a folder only by the trailing slash of a file entry.
  if (type === "5" || ((type === "0" || type === "\0") && name.endsWith("/") && body.length === 0)) {
    collector.folder(name);
    return;
  }
  // Where first, then what: "../x" is refused as a path even when it is also a link.
  skillPath(name);
  const quoted = JSON.stringify(shown(name));
  const only = "a skill holds regular files and folders only";
  if (type === "0" || type === "\0" || type === "7") {
    const path = collector.reserve(name, body.length);
    collector.put(path, Buffer.from(body));
    return;
  }
  if (type === "2") {
    throw refuse(
      "symlink",
      `${quoted} is a symbolic link (to ${JSON.stringify(shown(link))}); ${only}`,
      name,
    );
  }
  if (type === "1") {
    throw refuse("hardlink", `${quoted} is a hard link (to ${JSON.stringify(shown(link))}); ${only}`, name);
  }
  const kind = KINDS[type] ?? `an entry of type ${JSON.stringify(type)}`;
  throw refuse("special_file", `${quoted} is ${kind}; ${only}`, name);
}

/** ustar's name, with its prefix field when the header is POSIX ustar (GNU tar uses that room otherwise). */
function headerName(header: Buffer): string {
  const name = text(header.subarray(0, 100));
  const posix = header.toString("latin1", 257, 263) === "ustar\0";
  const prefix = posix ? text(header.subarray(345, 500)) : "";
  return prefix ? `${prefix}/${name}` : name;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** A NUL-terminated field as UTF-8; a name in another encoding is refused rather than guessed. */
function text(field: Buffer): string {
  const end = field.indexOf(0);
  const bytes = end < 0 ? field : field.subarray(0, end);
  try {
    return utf8.decode(bytes);
  } catch {
    throw refuse("bad_name", `a name in the tar archive is not UTF-8 (${bytes.toString("latin1")})`);
  }
}

/** An octal field, or GNU's base-256 form (high bit set) for values octal cannot hold. */
function readNumber(header: Buffer, at: number, length: number): number {
  const field = header.subarray(at, at + length);
  const first = field[0] ?? 0;
  if (first & 0x80) {
    if (first === 0xff) throw corrupt("a negative number in a header");
    let value = first & 0x7f;
    for (const b of field.subarray(1)) value = value * 256 + b;
    if (!Number.isSafeInteger(value)) throw corrupt("a number too large in a header");
    return value;
  }
  const digits = field
    .toString("latin1")
    .replace(/[\0 ]+$/, "")
    .trim();
  if (!/^[0-7]*$/.test(digits)) throw corrupt(`${JSON.stringify(digits)} where a number belongs`);
  return digits === "" ? 0 : Number.parseInt(digits, 8);
}

function checkChecksum(header: Buffer, offset: number): void {
  const stored = readNumber(header, 148, 8);
  let unsigned = 0;
  let signed = 0;
  for (let i = 0; i < BLOCK; i++) {
    const b = i >= 148 && i < 156 ? 0x20 : (header[i] ?? 0);
    unsigned += b;
    signed += b > 127 ? b - 256 : b;
  }
  // Old tars summed signed bytes; both are accepted, as GNU tar does.
  if (stored !== unsigned && stored !== signed)
    throw corrupt(`the header at byte ${offset} fails its checksum`);
}

/** A pax header's records, `<length> <key>=<value>\n`: path, linkpath, size (and a global comment) are used. */
function parsePax(body: Buffer): Pending & { comment?: string } {
  const out: Pending & { comment?: string } = {};
  let i = 0;
  while (i < body.length && body[i] !== 0) {
    const space = body.indexOf(0x20, i);
    const length = space < 0 ? Number.NaN : Number(body.toString("latin1", i, space));
    const end = i + length;
    if (!Number.isInteger(length) || end <= space + 1 || end > body.length || body[end - 1] !== 0x0a) {
      throw corrupt("a malformed pax record");
    }
    const record = body.subarray(space + 1, end - 1);
    const equals = record.indexOf(0x3d);
    if (equals < 1) throw corrupt("a pax record without key=value");
    const key = record.toString("latin1", 0, equals);
    const value = text(Buffer.concat([record.subarray(equals + 1), Buffer.from([0])]));
    if (key === "path") out.path = value;
    else if (key === "linkpath") out.linkpath = value;
    else if (key === "comment") out.comment = value;
    else if (key === "size") {
      if (!/^[0-9]{1,15}$/.test(value)) throw corrupt(`a pax size of ${JSON.stringify(value)}`);
      out.size = Number(value);
    }
    i = end;
  }
  return out;
}
