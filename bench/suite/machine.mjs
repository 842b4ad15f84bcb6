// The machine a run happened on, for the report: CPU, cores, memory, Node, the date, the checkout.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { cpus, loadavg, release, totalmem } from "node:os";
import { join } from "node:path";

export function machine() {
  let cpu = cpus()[0]?.model ?? "unknown";
  try {
    cpu = /^model name\s*:\s*(.+)$/m.exec(readFileSync("/proc/cpuinfo", "utf8"))?.[1] ?? cpu;
  } catch {
    // not Linux: os.cpus() said what it could
  }
  let checkout = "unknown";
  try {
    checkout = execFileSync("git", ["describe", "--always", "--dirty"], {
      cwd: join(import.meta.dirname, "..", ".."),
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    }).trim();
  } catch {
    // not a git checkout
  }
  return {
    cpu,
    cores: cpus().length,
    memory: `${(totalmem() / 1024 ** 3).toFixed(1)} GiB`,
    node: process.version,
    kernel: `${process.platform} ${release()}`,
    date: new Date().toISOString(),
    checkout,
    /** The 1-minute load average when the run began: above ~0.5, something else was using the CPU. */
    load: loadavg()[0].toFixed(2),
  };
}
