/**
 * The limits a runaway process cannot pass, set with util-linux's `prlimit` around the program
 * (inside the sandbox, so they bind the program and everything it starts, not the sandbox's own
 * helpers): CPU seconds, address space, processes, file size, open files, and no core dumps.
 *
 * RLIMIT_NPROC counts a user's processes. In bubblewrap's user namespace (a daemon that is not
 * root) it counts the sandbox's own, since Linux 5.14 keeps the count per user namespace. For root
 * the kernel never applies it, so a root daemon also puts each sandbox in a pids cgroup (cgroup.ts).
 */
import type { SandboxConfig } from "../../sdk/config.js";

const MIB = 1024 * 1024;

export type Limits = Pick<SandboxConfig, "cpu_s" | "memory_mb" | "processes" | "file_size_mb" | "open_files">;

/** `command` run under the limits, through the `prlimit` at `prlimit`. */
export function withLimits(prlimit: string, limits: Limits, command: readonly string[]): string[] {
  return [
    prlimit,
    `--cpu=${limits.cpu_s}`,
    `--as=${limits.memory_mb * MIB}`,
    `--nproc=${limits.processes}`,
    `--fsize=${limits.file_size_mb * MIB}`,
    `--nofile=${limits.open_files}`,
    "--core=0",
    "--",
    ...command,
  ];
}
