// What /proc says about a process: its resident memory, alone or with its descendants.
import { readdirSync, readFileSync } from "node:fs";

/** VmRSS of one process in MiB (NaN once it is gone). */
export function rssMiB(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? Number.NaN) / 1024;
  } catch {
    return Number.NaN;
  }
}

/**
 * A process's resident memory split by what backs it, in MiB, from /proc/<pid>/smaps_rollup:
 * `anonymous` (malloc'd and V8 heap memory: where a leak grows) and `file` (mapped files: the node
 * binary, native modules, shared libraries, SQLite's WAL index).
 */
export function residentParts(pid) {
  const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, "utf8");
  const kib = (field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(rollup)?.[1] ?? Number.NaN);
  const rss = kib("Rss");
  const anonymous = kib("Anonymous");
  return { rss: rss / 1024, anonymous: anonymous / 1024, file: (rss - anonymous) / 1024 };
}

/** The pids of a process's descendants (children, their children …), from each process's ppid. */
export function descendants(pid) {
  const parentOf = new Map();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // The command name is in parentheses and may hold spaces: the fields after the last ")".
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      parentOf.set(Number(entry), Number(fields[1]));
    } catch {
      // the process ended while we looked
    }
  }
  const found = [];
  const queue = [pid];
  while (queue.length) {
    const parent = queue.shift();
    for (const [child, ppid] of parentOf) {
      if (ppid === parent) {
        found.push(child);
        queue.push(child);
      }
    }
  }
  return found;
}

/** RSS of a process and all its descendants, in MiB (shared pages counted once per process). */
export function treeRssMiB(pid) {
  return [pid, ...descendants(pid)].reduce((sum, p) => sum + (rssMiB(p) || 0), 0);
}
