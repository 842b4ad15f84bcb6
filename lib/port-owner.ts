import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { SparError } from "../sdk/errors.js";

/**
 * Finds the process listening on a TCP port, from /proc (Linux). Returns undefined where /proc is
 * absent or the owner is not visible to this user: the caller then suggests `lsof` instead.
 */
export function findPortOwner(port: number): { pid: number; command: string } | undefined {
  if (process.platform !== "linux") return undefined;
  const inodes = new Set<string>();
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text: string;
    try {
      text = readFileSync(table, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const cols = line.trim().split(/\s+/);
      const local = cols[1];
      // State 0A is LISTEN; the local address ends in the port in hex.
      if (local && cols[3] === "0A" && Number.parseInt(local.split(":")[1] ?? "", 16) === port && cols[9]) {
        inodes.add(cols[9]);
      }
    }
  }
  if (inodes.size === 0) return undefined;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${entry}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      let target: string;
      try {
        target = readlinkSync(`/proc/${entry}/fd/${fd}`);
      } catch {
        continue;
      }
      const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
      if (inode && inodes.has(inode)) {
        let command = "unknown";
        try {
          command =
            readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0").filter(Boolean).join(" ") || command;
        } catch {
          // The process may have exited between the two reads.
        }
        return { pid: Number(entry), command };
      }
    }
  }
  return undefined;
}

/**
 * PORT_IN_USE for a listener that could not bind: which process holds the port (where /proc tells),
 * how to stop it, and the setting that chooses another address.
 *
 * @example
 * if ((err as NodeJS.ErrnoException).code === "EADDRINUSE") throw portInUse(host, port, "[metrics] listen");
 */
export function portInUse(host: string, port: number, setting: string): SparError {
  const owner = findPortOwner(port);
  const who = owner ? ` by ${owner.command} (pid ${owner.pid})` : "";
  const fix = owner
    ? `stop that process (kill ${owner.pid}) and start again`
    : `find the process holding it (lsof -i :${port}) and stop it`;
  return new SparError(
    "PORT_IN_USE",
    `port ${port} on ${host} is already in use${who}. Fix: ${fix}, or set ${setting} to a free address`,
    { port },
  );
}
