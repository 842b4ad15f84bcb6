/**
 * A damaged write-ahead log, found before SQLite opens it. SQLite's own recovery stops at the first
 * frame whose checksum fails and silently drops every commit from there on, as it must for a frame a
 * power cut tore (https://sqlite.org/walformat.html). A torn write can only hit the last commit, the
 * one still being written; so a break followed by further whole commits is damage, not a tear, and
 * opening would lose acknowledged data without a word. This reads the log as SQLite would (the
 * 32-byte header, then frames of a 24-byte header and one page, each checksum chained to the one
 * before) and says which it is. The pages are encrypted by SQLCipher, but the frame headers are
 * plain and the checksums cover the bytes on disk, so no key is needed.
 */
import { closeSync, existsSync, fstatSync, openSync, readSync } from "node:fs";

const MAGIC_LE = 0x377f0682;
const MAGIC_BE = 0x377f0683;
const WAL_VERSION = 3007000;
const HEADER = 32;
const FRAME_HEADER = 24;

/** What the log holds: nothing to fear (no log, a clean one, a torn tail), or damage and its cause. */
export type WalVerdict = { status: "ok" } | { status: "damaged"; reason: string };

/**
 * Checks `<dbPath>-wal`, if there is one. Damaged when its header is broken while frames follow it,
 * or when a frame of the current log fails its checksum and more than one commit starts at or after
 * it (the last commit alone may be torn by a crash; SQLite drops it, as it should).
 *
 * @example
 * const wal = inspectWal(dbPath);
 * if (wal.status === "damaged") throw corruptError(dbPath, wal.reason);
 */
export function inspectWal(dbPath: string): WalVerdict {
  const walPath = `${dbPath}-wal`;
  if (!existsSync(walPath)) return { status: "ok" };
  const fd = openSync(walPath, "r");
  try {
    return inspect(fd, walPath, fstatSync(fd).size);
  } finally {
    closeSync(fd);
  }
}

function inspect(fd: number, walPath: string, size: number): WalVerdict {
  if (size < HEADER) return { status: "ok" }; // a header torn while the log was created: nothing in it
  const header = read(fd, 0, HEADER);
  const magic = header.readUInt32BE(0);
  const rawPageSize = header.readUInt32BE(8);
  const pageSize = rawPageSize === 1 ? 65536 : rawPageSize;
  const sane =
    (magic === MAGIC_LE || magic === MAGIC_BE) &&
    header.readUInt32BE(4) === WAL_VERSION &&
    pageSize >= 512 &&
    pageSize <= 65536 &&
    (pageSize & (pageSize - 1)) === 0;
  const bigEndian = magic === MAGIC_BE;
  const headerSum = sane ? checksum(header.subarray(0, 24), [0, 0], bigEndian) : undefined;
  const headerOk =
    headerSum && headerSum[0] === header.readUInt32BE(24) && headerSum[1] === header.readUInt32BE(28);
  if (!headerOk) {
    if (size < HEADER + FRAME_HEADER + (sane ? pageSize : 512)) return { status: "ok" };
    return {
      status: "damaged",
      reason:
        `its write-ahead log ${walPath} is damaged: the log's header fails its check, so SQLite would ` +
        "ignore every commit in it and open the database without them",
    };
  }

  const salts = [header.readUInt32BE(16), header.readUInt32BE(20)];
  let sum: [number, number] = [header.readUInt32BE(24), header.readUInt32BE(28)];
  const frameSize = FRAME_HEADER + pageSize;
  let broken: { frame: number; page: number } | undefined;
  let commitsFromBreak = 0;
  for (let frame = 0; HEADER + (frame + 1) * frameSize <= size; frame++) {
    const bytes = read(fd, HEADER + frame * frameSize, frameSize);
    // Frames of an older generation of the log (before SQLite restarted it) end the current one.
    if (bytes.readUInt32BE(8) !== salts[0] || bytes.readUInt32BE(12) !== salts[1]) break;
    const commit = bytes.readUInt32BE(4) !== 0;
    if (broken) {
      if (commit) commitsFromBreak++;
      continue;
    }
    sum = checksum(bytes.subarray(0, 8), sum, bigEndian);
    sum = checksum(bytes.subarray(FRAME_HEADER), sum, bigEndian);
    if (sum[0] !== bytes.readUInt32BE(16) || sum[1] !== bytes.readUInt32BE(20)) {
      broken = { frame: frame + 1, page: bytes.readUInt32BE(0) };
      if (commit) commitsFromBreak++;
    }
  }
  if (!broken || commitsFromBreak < 2) return { status: "ok" };
  return {
    status: "damaged",
    reason:
      `its write-ahead log ${walPath} is damaged: frame ${broken.frame} (page ${broken.page}) fails its ` +
      `checksum while ${commitsFromBreak} commits start at or after it, more than a crash can tear; SQLite ` +
      "would silently drop all of them. Moving spar.db-wal aside opens the database without them",
  };
}

/** SQLite's WAL checksum: two 32-bit sums over 8-byte steps, in the log's byte order. */
function checksum(data: Buffer, [first, second]: [number, number], bigEndian: boolean): [number, number] {
  let s0 = first;
  let s1 = second;
  for (let i = 0; i + 8 <= data.length; i += 8) {
    const a = bigEndian ? data.readUInt32BE(i) : data.readUInt32LE(i);
    const b = bigEndian ? data.readUInt32BE(i + 4) : data.readUInt32LE(i + 4);
    s0 = (s0 + a + s1) >>> 0;
    s1 = (s1 + b + s0) >>> 0;
  }
  return [s0, s1];
}

function read(fd: number, position: number, length: number): Buffer {
  const buffer = Buffer.alloc(length);
  readSync(fd, buffer, 0, length, position);
  return buffer;
}
