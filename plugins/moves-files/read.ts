import { constants, promises as fs } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { SparError } from "../../sdk/index.js";
import { type Confinement, procPath } from "./confine.js";

export interface ReadInput {
  path: string;
  /** The first byte to read (default 0). */
  offset?: number;
  /** At most this many bytes. */
  length?: number;
}

export interface ReadLimits {
  /** `[moves.files] max_read_bytes`. */
  maxBytes: number;
  /** `[agent] max_tool_result_chars`: a page must fit in one tool result, uncut. */
  resultChars: number;
}

/** Room left in a tool result for the header line. */
const HEADER_ROOM = 120;

/**
 * `file_read`: one page of a UTF-8 text file, its first line saying which bytes it holds and where
 * the next page starts. `opened` sees the file once it is open, with its real path (provenance.ts). Offsets are bytes: a page never splits a character (the start moves on past
 * continuation bytes, the end stops before an incomplete character), and the text of N bytes is at
 * most N UTF-16 units, so a page sized to the result limit is never cut by the kernel.
 */
export async function readText(
  confinement: Confinement,
  input: ReadInput,
  limits: ReadLimits,
  opened?: (file: FileHandle, real: string, display: string) => Promise<void>,
): Promise<string> {
  const found = await confinement.locate(input.path);
  try {
    confinement.checkFile(found.stats, found.display);
    confinement.checkSingleLink(found.stats, found.display);
    const file = await confinement.reopen(found, constants.O_RDONLY);
    try {
      // Whose words these are is judged on the file as opened here, not on a path read again.
      await opened?.(file, await fs.readlink(procPath(found.handle.fd)), found.display);
      const size = (await file.stat()).size;
      const offset = input.offset ?? 0;
      if (size === 0) return "[0 bytes: the file is empty]";
      if (offset >= size) {
        throw new SparError(
          "VALIDATION_FAILED",
          `offset ${offset} is at or past the end of ${JSON.stringify(found.display)}, which has ${size} bytes`,
        );
      }
      const budget = Math.min(
        input.length ?? limits.maxBytes,
        limits.maxBytes,
        Math.max(64, limits.resultChars - HEADER_ROOM),
      );
      const buffer = Buffer.alloc(Math.min(budget, size - offset));
      let filled = 0;
      while (filled < buffer.length) {
        const { bytesRead } = await file.read(buffer, filled, buffer.length - filled, offset + filled);
        if (bytesRead === 0) break;
        filled += bytesRead;
      }
      return page(buffer.subarray(0, filled), offset, size);
    } finally {
      await file.close();
    }
  } finally {
    await found.handle.close();
  }
}

/** The header and text of the bytes read at `offset`, or a notice when they are not UTF-8 text. */
export function page(bytes: Buffer, offset: number, size: number): string {
  const atEnd = offset + bytes.length >= size;
  const skip = offset > 0 ? leadingContinuations(bytes) : 0;
  const end = atEnd ? bytes.length : wholeCharacters(bytes);
  if (!atEnd && end <= skip) {
    throw new SparError(
      "VALIDATION_FAILED",
      `${bytes.length} bytes at offset ${offset} hold no whole character; ask for more`,
    );
  }
  const text = decode(bytes.subarray(skip, end));
  if (text === undefined) {
    return `[binary: ${size} bytes that are not UTF-8 text; file_read shows text files only]`;
  }
  const start = offset + skip;
  const stop = offset + end;
  const header =
    start === 0 && stop >= size
      ? `[${size} bytes, the whole file]`
      : stop >= size
        ? `[bytes ${start} to ${stop} of ${size}: the end of the file]`
        : `[bytes ${start} to ${stop} of ${size}; to read on, offset ${stop}]`;
  return `${header}\n${text}`;
}

/** Strict UTF-8 with no NUL, or undefined (binary). */
function decode(bytes: Buffer): string | undefined {
  if (bytes.includes(0)) return undefined;
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

/** How many continuation bytes (at most 3) start the buffer: the tail of a character cut by the offset. */
function leadingContinuations(bytes: Buffer): number {
  let n = 0;
  while (n < 3 && n < bytes.length && ((bytes[n] as number) & 0xc0) === 0x80) n++;
  return n;
}

/** The buffer's length without an incomplete character at its end. */
export function wholeCharacters(bytes: Buffer): number {
  for (let back = 1; back <= Math.min(4, bytes.length); back++) {
    const byte = bytes[bytes.length - back] as number;
    if ((byte & 0xc0) === 0x80) continue;
    const need = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return need > back ? bytes.length - back : bytes.length;
  }
  return bytes.length;
}
