import { readdirSync, readFileSync } from "node:fs";

/**
 * Processes on this machine (seen from here, outside any sandbox) with `marker` as one of their
 * arguments, zombies left out. Sandboxed processes have PIDs of their own namespace, so a test finds
 * them by a unique argument (`sleep 3011`) instead of a PID they report.
 */
export function processesWith(marker: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const args = readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0");
      if (!args.includes(marker)) continue;
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      if (stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) === "Z") continue;
      found.push(Number(name));
    } catch {}
  }
  return found;
}
