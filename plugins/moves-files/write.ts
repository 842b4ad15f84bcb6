import { randomBytes } from "node:crypto";
import type { Stats } from "node:fs";
import { constants, promises as fs } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { join } from "node:path";
import { SparError } from "../../sdk/index.js";
import { type Confinement, procPath, type Slot } from "./confine.js";
import { type FileRecords, hashFile, sha256Of } from "./provenance.js";

const { O_WRONLY, O_RDWR, O_CREAT, O_EXCL, O_NOFOLLOW, O_APPEND, O_NONBLOCK, O_RDONLY } = constants;
/** A new file: never through a symlink, never onto an existing name. */
const CREATE_NEW = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK;

export type WriteMode = "create" | "overwrite" | "append";

export interface WriteInput {
  path: string;
  content: string;
  mode?: WriteMode;
}

export interface WriteResult {
  path: string;
  mode: WriteMode;
  bytes: number;
  created: boolean;
}

/**
 * `file_write`. create: a new file only (O_EXCL, so never through a symlink). overwrite: the text
 * goes to a temporary file in the same folder, which is then renamed over the name, so a reader sees
 * the old file or the new one, never half of it, and a hard link elsewhere keeps the old content.
 * append: adds to the file in place, so it refuses a file with more than one hard link (another name,
 * possibly outside, would change too).
 */
export async function writeFile(
  confinement: Confinement,
  input: WriteInput,
  maxBytes: number,
  records?: WriteRecords,
): Promise<WriteResult> {
  const mode = input.mode ?? "create";
  const data = Buffer.from(input.content, "utf8");
  if (data.length > maxBytes) {
    throw new SparError(
      "PAYLOAD_TOO_LARGE",
      `content is ${data.length} bytes; file_write takes at most ${maxBytes} per call (write the rest with mode "append")`,
    );
  }
  const slot = await confinement.slot(input.path, true);
  try {
    const done = (created: boolean): WriteResult => ({
      path: slot.display,
      mode,
      bytes: data.length,
      created,
    });
    const existing = await confinement.probe(slot);
    try {
      if (!existing) {
        await createNew(slot, data);
        await records?.wrote(await realOf(slot), sha256Of(data));
        return done(true);
      }
      if (mode === "create") {
        throw new SparError(
          "CONFLICT",
          `${JSON.stringify(slot.display)} already exists; pass mode "overwrite" to replace it or "append" to add to it`,
        );
      }
      confinement.checkFile(existing.stats, slot.display);
      if (mode === "overwrite") {
        await replace(slot, data, existing.stats);
        await records?.wrote(await realOf(slot), sha256Of(data));
        return done(false);
      }
      confinement.checkSingleLink(existing.stats, slot.display);
      const file = await confinement.reopen(existing, (records ? O_RDWR : O_WRONLY) | O_APPEND);
      try {
        // Appended to a file of the fighter's own, the whole stays its own; to anyone else's, it does not.
        const before = records ? await hashFile(file) : undefined;
        const real = before ? await realOf(slot) : "";
        const own = before ? await records?.own(real, before.copy().digest("hex")) : false;
        await file.writeFile(data);
        if (own && before) await records?.wrote(real, before.update(data).digest("hex"));
      } finally {
        await file.close();
      }
      return done(false);
    } finally {
      await existing?.handle.close();
    }
  } finally {
    await slot.dir.close();
  }
}

export interface EditInput {
  path: string;
  old: string;
  new: string;
  count?: number;
}

/**
 * `file_edit`: exact find and replace. `old` must occur exactly `count` times (default once),
 * counted without overlaps as they are replaced; the result is written like an overwrite, and only if
 * the file did not change between the read and the rename.
 */
export async function editFile(
  confinement: Confinement,
  input: EditInput,
  maxBytes: number,
  records?: WriteRecords,
): Promise<{ path: string; replaced: number; bytes: number }> {
  const slot = await confinement.slot(input.path, false);
  try {
    const existing = await confinement.probe(slot);
    if (!existing) throw new SparError("NOT_FOUND", `${JSON.stringify(slot.display)} does not exist`);
    try {
      const quoted = JSON.stringify(slot.display);
      confinement.checkFile(existing.stats, slot.display);
      confinement.checkSingleLink(existing.stats, slot.display);
      if (existing.stats.size > maxBytes) {
        throw new SparError(
          "PAYLOAD_TOO_LARGE",
          `${quoted} has ${existing.stats.size} bytes; file_edit changes files of at most ${maxBytes}`,
        );
      }
      const file = await confinement.reopen(existing, O_RDONLY);
      const raw = await readAtMost(file, maxBytes).finally(() => file.close());
      if (raw === undefined) {
        throw new SparError(
          "PAYLOAD_TOO_LARGE",
          `${quoted} grew past ${maxBytes} bytes while it was being read; file_edit changes files of at most ${maxBytes}`,
        );
      }
      const text = utf8(raw);
      if (text === undefined) {
        throw new SparError(
          "VALIDATION_FAILED",
          `${quoted} is not UTF-8 text; file_edit changes text files only`,
        );
      }
      const found = occurrences(text, input.old);
      const expected = input.count ?? 1;
      if (found === 0) throw new SparError("NOT_FOUND", `the text in "old" does not occur in ${quoted}`);
      if (found !== expected) {
        const advice =
          input.count === undefined
            ? `add surrounding text to "old" so it occurs once, or pass count: ${found} to replace every one`
            : `pass count: ${found} to replace every one`;
        throw new SparError(
          "CONFLICT",
          `the text in "old" occurs ${found} times in ${quoted}, not ${expected}; nothing was changed; ${advice}`,
        );
      }
      const data = Buffer.from(text.split(input.old).join(input.new), "utf8");
      if (data.length > maxBytes) {
        throw new SparError(
          "PAYLOAD_TOO_LARGE",
          `the edited file would have ${data.length} bytes; file_edit writes at most ${maxBytes}`,
        );
      }
      // An edit keeps most of what the file held: it is the fighter's own after only if it was before.
      const real = records ? await realOf(slot) : "";
      const own = records ? await records.own(real, sha256Of(raw)) : false;
      await replace(slot, data, existing.stats);
      if (own) await records?.wrote(real, sha256Of(data));
      return { path: slot.display, replaced: found, bytes: data.length };
    } finally {
      await existing.handle.close();
    }
  } finally {
    await slot.dir.close();
  }
}

/** Non-overlapping occurrences, left to right: exactly the ones `split(old).join(new)` replaces. */
export function occurrences(text: string, old: string): number {
  let count = 0;
  for (let at = text.indexOf(old); at !== -1; at = text.indexOf(old, at + old.length)) count++;
  return count;
}

/**
 * The whole file, or undefined when it holds more than `max` bytes. The size checked before may be
 * stale (another process can grow the file), so the read itself stops at one byte past the limit.
 */
export async function readAtMost(file: FileHandle, max: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let total = 0;
  while (total <= max) {
    const chunk = Buffer.alloc(Math.min(65_536, max + 1 - total));
    const { bytesRead } = await file.read(chunk, 0, chunk.length, total);
    if (bytesRead === 0) break;
    chunks.push(chunk.subarray(0, bytesRead));
    total += bytesRead;
  }
  return total > max ? undefined : Buffer.concat(chunks, total);
}

function utf8(bytes: Buffer): string | undefined {
  if (bytes.includes(0)) return undefined;
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

/** What a write tells the fighter's file records (provenance.ts). */
export type WriteRecords = Pick<FileRecords, "wrote" | "own">;

/** The real path of the slot's name: its verified folder's, and the name. */
async function realOf(slot: Slot): Promise<string> {
  return join(await fs.readlink(procPath(slot.dir.fd)), slot.name);
}

async function createNew(slot: Slot, data: Buffer): Promise<void> {
  const path = procPath(slot.dir.fd, slot.name);
  const file = await fs.open(path, CREATE_NEW, 0o666);
  try {
    await file.writeFile(data);
    await file.sync();
  } catch (err) {
    await fs.unlink(path).catch(() => undefined);
    throw err;
  } finally {
    await file.close();
  }
}

/**
 * Writes `data` to a temporary name in the verified folder and renames it over `slot.name`: atomic,
 * keeps the old file's permission bits, and refuses (CONFLICT) when `before` no longer describes
 * what the name holds (another writer got there between our read and our rename).
 */
async function replace(slot: Slot, data: Buffer, before: Stats): Promise<void> {
  const temp = `.spar-${randomBytes(8).toString("hex")}.tmp`;
  const tempPath = procPath(slot.dir.fd, temp);
  const file = await fs.open(tempPath, CREATE_NEW, 0o600);
  try {
    try {
      await file.writeFile(data);
      await file.chmod(before.mode & 0o7777);
      await file.sync();
    } finally {
      await file.close();
    }
    const now = await fs.lstat(procPath(slot.dir.fd, slot.name));
    if (
      now.ino !== before.ino ||
      now.dev !== before.dev ||
      now.mtimeMs !== before.mtimeMs ||
      now.size !== before.size
    ) {
      throw new SparError(
        "CONFLICT",
        `${JSON.stringify(slot.display)} changed while it was being written; read it again`,
      );
    }
    await fs.rename(tempPath, procPath(slot.dir.fd, slot.name));
  } catch (err) {
    await fs.unlink(tempPath).catch(() => undefined);
    throw err;
  }
}
