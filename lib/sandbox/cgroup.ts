/**
 * A pids cgroup per sandbox, for a daemon running as root: the kernel never applies RLIMIT_NPROC to
 * root, so without it a fork bomb in the sandbox could fill the machine's process table until the
 * timeout. Root may make cgroups wherever the pids controller is mounted: the cgroup v1 `pids`
 * hierarchy, or the v2 hierarchy when its root enables `pids` for its children. The sandbox joins
 * its cgroup before bubblewrap starts (`/bin/sh -c 'echo $$ > cgroup.procs; exec bwrap …'`), so
 * nothing it forks is ever outside it. Without such a controller the processes limit of a root
 * daemon is not enforced; `spar doctor` says so.
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const PARENT = "spar-sandbox";

let base: string | null | undefined;

/** Where sandbox cgroups are made, or null when this daemon cannot make pids cgroups. */
export function pidsCgroupBase(): string | null {
  if (base !== undefined) return base;
  base = null;
  if (process.platform !== "linux" || process.getuid?.() !== 0) return base;
  for (const { root, v2 } of pidsRoots()) {
    try {
      const dir = join(root, PARENT);
      // cgroup v2: the root and the parent must each pass pids on to their children.
      if (v2) writeFileSync(join(root, "cgroup.subtree_control"), "+pids");
      mkdirSync(dir, { recursive: true });
      if (v2) writeFileSync(join(dir, "cgroup.subtree_control"), "+pids");
      base = dir;
      return base;
    } catch {}
  }
  return base;
}

/** Mount points of a pids controller: v1 `pids` first, then a v2 hierarchy whose root offers pids. */
function pidsRoots(): { root: string; v2: boolean }[] {
  let info: string;
  try {
    info = readFileSync("/proc/self/mountinfo", "utf8");
  } catch {
    return [];
  }
  const v1: { root: string; v2: boolean }[] = [];
  const v2: { root: string; v2: boolean }[] = [];
  for (const line of info.split("\n")) {
    const [before, after] = line.split(" - ");
    if (!before || !after) continue;
    const mountPoint = before.split(" ")[4];
    const [type, , options = ""] = after.split(" ");
    if (!mountPoint) continue;
    if (type === "cgroup" && options.split(",").includes("pids")) v1.push({ root: mountPoint, v2: false });
    if (type === "cgroup2") {
      try {
        if (readFileSync(join(mountPoint, "cgroup.controllers"), "utf8").split(/\s+/).includes("pids"))
          v2.push({ root: mountPoint, v2: true });
      } catch {}
    }
  }
  return [...v1, ...v2];
}

export interface PidsCgroup {
  /** The file a process writes its pid to, to join. */
  procs: string;
  /** Removes the cgroup once its processes are gone (a sandbox's die with its PID namespace). */
  remove(): void;
}

/** A new cgroup holding at most `max` processes, or undefined when none can be made. */
export function pidsCgroup(max: number): PidsCgroup | undefined {
  const parent = pidsCgroupBase();
  if (!parent) return undefined;
  const dir = join(parent, randomBytes(6).toString("hex"));
  try {
    mkdirSync(dir);
    writeFileSync(join(dir, "pids.max"), String(max));
  } catch {
    return undefined;
  }
  const remove = (attempt = 0) => {
    try {
      rmdirSync(dir);
    } catch (err) {
      // EBUSY while the last processes of the namespace are still being reaped.
      if ((err as NodeJS.ErrnoException).code === "EBUSY" && attempt < 50)
        setTimeout(() => remove(attempt + 1), 100).unref();
    }
  };
  return { procs: join(dir, "cgroup.procs"), remove: () => remove() };
}

/** `command` started inside the cgroup whose procs file is `procs`. */
export function inCgroup(procs: string, command: readonly string[]): string[] {
  return ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', procs, ...command];
}
