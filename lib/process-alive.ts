import { readFileSync } from "node:fs";

/**
 * Whether a process is alive: it exists and has not died. A process killed (kill -9) whose parent has
 * not reaped it yet is a zombie: it still answers signal 0, but it holds no port, no file and no
 * database, so it counts as dead. On Linux its state in `/proc/<pid>/stat` says so (`Z`, or `X`
 * while it is being reaped); where there is no /proc (macOS), signal 0 is all there is to ask.
 *
 * @example
 * if (!isProcessAlive(pid)) rmSync(pidFile); // left by a process that is gone
 */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    // EPERM: it exists, owned by another user.
    if ((err as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  return !isZombie(pid);
}

function isZombie(pid: number): boolean {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return false;
  }
  // "<pid> (<command>) <state> …": the command may hold spaces and parentheses, so read past the last ")".
  const state = stat.slice(stat.lastIndexOf(")") + 2)[0];
  return state === "Z" || state === "X";
}
