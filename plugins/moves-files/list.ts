import type { Stats } from "node:fs";
import { constants, promises as fs } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { SparError } from "../../sdk/index.js";
import { type Confinement, O_PATH, procPath } from "./confine.js";

export interface ListInput {
  path?: string;
  recursive?: boolean;
  limit?: number;
}

export interface ListEntry {
  /** Relative to the listed folder, `/` between names. */
  path: string;
  type: "file" | "folder" | "symlink" | "fifo" | "socket" | "device";
  /** Bytes, for files. */
  size?: number;
}

export interface ListResult {
  path: string;
  entries: ListEntry[];
  /** Set when the listing stopped early, saying why and what to do. */
  truncated?: string;
}

export interface ListLimits {
  /** `[moves.files] max_list_entries`. */
  maxEntries: number;
  /** `[agent] max_tool_result_chars`: the listing must fit in one tool result. */
  resultChars: number;
}

/** Room for the result's other fields. */
const RESULT_ROOM = 400;

/**
 * `file_list`: a folder's entries, sorted by name; with `recursive`, depth first. Symlinks are shown,
 * never followed, and a subfolder is entered only through its verified fd, so a listing cannot walk
 * out of the allowed roots. It stops at the entry limit or when the JSON would not fit in a tool
 * result, and says so.
 */
export async function listFolder(
  confinement: Confinement,
  input: ListInput,
  limits: ListLimits,
  signal: AbortSignal,
): Promise<ListResult> {
  const found = await confinement.locate(input.path ?? ".");
  try {
    if (!found.stats.isDirectory()) {
      throw new SparError(
        "VALIDATION_FAILED",
        `${JSON.stringify(found.display)} is not a folder; use file_read for a file`,
      );
    }
    const limit = Math.min(input.limit ?? limits.maxEntries, limits.maxEntries);
    const entries: ListEntry[] = [];
    let chars = 0;
    let truncated: string | undefined;

    const walk = async (dir: FileHandle, prefix: string): Promise<void> => {
      const names = (await fs.readdir(procPath(dir.fd))).sort();
      for (const name of names) {
        if (truncated) return;
        signal.throwIfAborted();
        const stats = await fs.lstat(procPath(dir.fd, name)).catch(() => undefined);
        if (!stats) continue; // removed while we listed
        const entry: ListEntry = { path: prefix + name, type: typeOf(stats) };
        if (entry.type === "file") entry.size = stats.size;
        chars += JSON.stringify(entry).length + 1;
        if (entries.length >= limit || chars > limits.resultChars - RESULT_ROOM) {
          truncated = `stopped after ${entries.length} entries; list a subfolder, or without recursive, to see the rest`;
          return;
        }
        entries.push(entry);
        if (input.recursive && entry.type === "folder") {
          const child = await fs
            .open(procPath(dir.fd, name), O_PATH | constants.O_DIRECTORY | constants.O_NOFOLLOW)
            .catch(() => undefined);
          if (!child) continue;
          try {
            const real = await fs.readlink(procPath(child.fd));
            if (confinement.allowed(real)) await walk(child, `${entry.path}/`);
          } finally {
            await child.close();
          }
        }
      }
    };

    await walk(found.handle, "");
    return { path: found.display, entries, ...(truncated ? { truncated } : {}) };
  } finally {
    await found.handle.close();
  }
}

function typeOf(stats: Stats): ListEntry["type"] {
  if (stats.isFile()) return "file";
  if (stats.isDirectory()) return "folder";
  if (stats.isSymbolicLink()) return "symlink";
  if (stats.isFIFO()) return "fifo";
  if (stats.isSocket()) return "socket";
  return "device";
}
