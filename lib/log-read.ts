/**
 * Reading the daemon's log for `spar logs`: the JSON lines of `<data dir>/logs/spar.log` and its
 * rotated files (spar.log.1 newest), filtered and pretty-printed, and followed as the daemon writes,
 * across rotations. It reads the files directly, so it works while the daemon is down.
 */
import { closeSync, existsSync, fstatSync, openSync, readFileSync, readSync, statSync } from "node:fs";
import { SparError } from "../sdk/errors.js";

/** One entry as the daemon writes it (lib/log-file.ts): time, level, msg, then its fields. */
export interface LogEntry {
  time: string;
  level: string;
  msg: string;
  [field: string]: unknown;
}

/** A line of the file: its entry, or, for a line that is not one (an older Spar's text), undefined. */
export interface LogLine {
  raw: string;
  entry?: LogEntry;
}

export interface LogFilter {
  /** The least severe level shown. */
  level?: "info" | "warn" | "error";
  /** Entries at or after this time. */
  since?: Date;
  /** A fighter's name or id. */
  fighter?: string;
}

const RANK: Record<string, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60 };

/** `--level`'s value, checked. */
export function parseLevel(value: string): LogFilter["level"] {
  if (value === "info" || value === "warn" || value === "error") return value;
  throw new SparError(
    "VALIDATION_FAILED",
    `--level must be info, warn or error, not ${JSON.stringify(value)}`,
  );
}

/**
 * `--since`'s value: an ISO 8601 time (a date, or a date and time; without a zone it is local time,
 * as `date` prints it), or a duration back from `now`: a whole number and s, m, h or d.
 *
 * @example
 * parseSince("15m", new Date("2026-01-01T10:00:00Z")); // 2026-01-01T09:45:00Z
 */
export function parseSince(value: string, now = new Date()): Date {
  const duration = /^(\d+)(s|m|h|d)$/.exec(value);
  if (duration) {
    const unit = { s: 1, m: 60, h: 3600, d: 86_400 }[duration[2] as "s" | "m" | "h" | "d"];
    return new Date(now.getTime() - Number(duration[1]) * unit * 1000);
  }
  const time = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(value)
    ? new Date(value.replace(" ", "T"))
    : undefined;
  if (!time || Number.isNaN(time.getTime())) {
    throw new SparError(
      "VALIDATION_FAILED",
      `--since must be an ISO time (2026-01-31 or 2026-01-31T09:00) or a duration (90s, 15m, 2h, 1d), not ${JSON.stringify(value)}`,
    );
  }
  return time;
}

/** Parses one line; a line that is not a JSON log entry comes back without `entry`. */
export function parseLine(raw: string): LogLine {
  if (!raw.startsWith("{")) return { raw };
  try {
    const value = JSON.parse(raw) as Partial<LogEntry>;
    if (typeof value.time === "string" && typeof value.level === "string")
      return { raw, entry: value as LogEntry };
  } catch {
    // An older Spar's text line, or a line cut short by a crash: shown as it is.
  }
  return { raw };
}

/** Whether a line passes the filter. A line that is not an entry passes only an empty filter. */
export function matches(line: LogLine, filter: LogFilter): boolean {
  const { entry } = line;
  if (!entry) return !filter.level && !filter.since && !filter.fighter;
  if (filter.level && (RANK[entry.level] ?? 0) < (RANK[filter.level] ?? 0)) return false;
  if (filter.since && Date.parse(entry.time) < filter.since.getTime()) return false;
  if (filter.fighter) {
    const f = filter.fighter;
    const path = typeof entry.path === "string" ? entry.path : "";
    // A turn's lines name the fighter; a request's names it in its path (/fighters/<name|id>/…).
    const about =
      entry.fighter === f || entry.fighter_id === f || path.includes(`/fighters/${encodeURIComponent(f)}`);
    if (!about) return false;
  }
  return true;
}

/** The log file and its rotated files, newest first: spar.log, spar.log.1, spar.log.2 … */
export function logFiles(path: string): string[] {
  const files = existsSync(path) ? [path] : [];
  for (let n = 1; existsSync(`${path}.${n}`); n++) files.push(`${path}.${n}`);
  return files;
}

/** What `spar logs` shows before following: the lines, and where following takes up. */
export interface LogTail {
  lines: LogLine[];
  /** Bytes of spar.log read (following reads from there), and that file's inode. */
  offset: number;
  ino: number;
}

/**
 * The last `count` lines passing `filter` (all of them with `since` and no `count`), oldest first,
 * from spar.log and, when it holds too few, the rotated files. Rotated files older than `since`
 * are not read.
 */
export function readTail(path: string, filter: LogFilter, count?: number): LogTail {
  let offset = 0;
  let ino = 0;
  const out: LogLine[] = [];
  for (const [index, file] of logFiles(path).entries()) {
    let text: string;
    if (index === 0) {
      const fd = openSync(file, "r");
      try {
        const buffer = readFileSync(fd);
        ino = fstatSync(fd).ino;
        // Up to the last whole line: a line being written is read when following.
        offset = buffer.lastIndexOf(10) + 1;
        text = buffer.subarray(0, offset).toString("utf8");
      } finally {
        closeSync(fd);
      }
    } else text = readFileSync(file, "utf8");
    const lines = text.split("\n").filter((l) => l !== "");
    const kept = lines.map(parseLine).filter((l) => matches(l, filter));
    out.unshift(...kept);
    if (count !== undefined && out.length >= count) break;
    // The file's first entry is older than `since`: the rotated ones before it are older still.
    const first = lines.map(parseLine).find((l) => l.entry)?.entry;
    if (filter.since && first && Date.parse(first.time) < filter.since.getTime()) break;
  }
  return { lines: count === undefined ? out : out.slice(Math.max(0, out.length - count)), offset, ino };
}

/**
 * Follows spar.log from `start`, handing each new whole line to `onLine`, until `signal` aborts.
 * A rotation (spar.log renamed to spar.log.1, a new spar.log made) is noticed by the inode: what
 * the old file got after it was last read is read to its end first, then the new file from its start.
 * Polls every `intervalMs`, as `tail -F` does where change notifications do not follow renames.
 */
export async function follow(
  path: string,
  start: { offset: number; ino: number },
  onLine: (line: LogLine) => void,
  signal: AbortSignal,
  intervalMs = 200,
): Promise<void> {
  let fd: number | undefined;
  let ino = start.ino;
  let offset = start.offset;
  let partial = "";
  const open = () => {
    try {
      const opened = openSync(path, "r");
      const stat = fstatSync(opened);
      return { fd: opened, ino: stat.ino };
    } catch {
      return undefined;
    }
  };
  const drain = (from: number): number => {
    if (fd === undefined) return from;
    const chunk = Buffer.alloc(64 * 1024);
    let at = from;
    for (;;) {
      const n = readSync(fd, chunk, 0, chunk.length, at);
      if (n <= 0) break;
      at += n;
      const text = partial + chunk.subarray(0, n).toString("utf8");
      const parts = text.split("\n");
      partial = parts.pop() ?? "";
      for (const raw of parts) if (raw !== "") onLine(parseLine(raw));
    }
    return at;
  };
  const first = open();
  if (first && first.ino === ino) fd = first.fd;
  else if (first) {
    // Rotated between the read and now: the new file is read whole.
    fd = first.fd;
    ino = first.ino;
    offset = 0;
  }
  try {
    while (!signal.aborted) {
      offset = drain(offset);
      let current: number | undefined;
      try {
        current = statSync(path).ino;
      } catch {
        current = undefined;
      }
      if (current !== undefined && current !== ino) {
        // Rotated: finish the old file (now spar.log.<n>), read the files rotated since it whole
        // (several rotations may pass between two polls), then take the new one from its start.
        drain(offset);
        if (fd !== undefined) closeSync(fd);
        fd = undefined;
        partial = "";
        const next = open();
        for (const file of rotatedSince(path, ino, next?.ino)) {
          for (const raw of readFileSync(file, "utf8").split("\n")) if (raw !== "") onLine(parseLine(raw));
        }
        if (next) {
          fd = next.fd;
          ino = next.ino;
          offset = 0;
          continue;
        }
        ino = 0;
      } else if (fd !== undefined && fstatSync(fd).size < offset) {
        // Truncated in place (by hand): start again from its beginning.
        offset = 0;
        partial = "";
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, intervalMs);
        signal.addEventListener("abort", () => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * The rotated files newer than the one with inode `oldIno`, oldest first, leaving out the one with
 * inode `currentIno` (the live file, read through its own descriptor). None when the old file is
 * gone (past the kept count): what was in between cannot be told apart then.
 */
function rotatedSince(path: string, oldIno: number, currentIno: number | undefined): string[] {
  const rotated = logFiles(path).slice(1);
  const inode = (file: string) => {
    try {
      return statSync(file).ino;
    } catch {
      return -1;
    }
  };
  const at = rotated.findIndex((file) => inode(file) === oldIno);
  if (at <= 0) return [];
  return rotated
    .slice(0, at)
    .reverse()
    .filter((file) => inode(file) !== currentIno);
}

const COLOURS: Record<string, string> = {
  info: "\x1b[32m",
  warn: "\x1b[33m",
  error: "\x1b[31m",
  fatal: "\x1b[35m",
};
const RESET = "\x1b[0m";
const DIM = "\x1b[2m";

/**
 * One line for a reader: the UTC time, level (coloured on a terminal), message, then the
 * fields as `key=value` (strings JSON-quoted when they hold a space or a quote).
 *
 * @example
 * pretty({ time: "2026-01-01T10:00:00.000Z", level: "warn", msg: "slow", fighter: "ada" }, false);
 * // "2026-01-01 10:00:00.000 WARN  slow fighter=ada"
 */
export function pretty(line: LogLine, colour: boolean): string {
  const { entry } = line;
  if (!entry) return line.raw;
  const { time, level, msg, pid: _pid, ...fields } = entry;
  const when = time.replace("T", " ").replace(/Z$/, "");
  const label = level.toUpperCase().padEnd(5);
  const shown = colour ? `${COLOURS[level] ?? ""}${label}${RESET}` : label;
  const extra = Object.entries(fields)
    .map(([k, v]) => {
      const text =
        typeof v === "string" ? (/[\s"=]/.test(v) || v === "" ? JSON.stringify(v) : v) : JSON.stringify(v);
      return colour ? `${DIM}${k}=${RESET}${text}` : `${k}=${text}`;
    })
    .join(" ");
  return `${colour ? DIM : ""}${when}${colour ? RESET : ""} ${shown} ${msg}${extra ? ` ${extra}` : ""}`;
}
