// The functions a .cpuprofile (node --cpu-prof) spent most self time in: a first look before
// opening it in DevTools or speedscope.
import { readFileSync } from "node:fs";
import { relative } from "node:path";
import { ROOT } from "./daemon.mjs";

export function topSelfTime(file, count = 8) {
  const profile = JSON.parse(readFileSync(file, "utf8"));
  const totalMs = (profile.endTime - profile.startTime) / 1000;
  const samples = profile.samples?.length || 1;
  const byName = new Map();
  for (const node of profile.nodes) {
    const { functionName, url, lineNumber } = node.callFrame;
    const where = url ? `${relative(ROOT, url.replace(/^file:\/\//, ""))}:${lineNumber + 1}` : "";
    const name = `${functionName || "(anonymous)"}${where ? ` ${where}` : ""}`;
    byName.set(name, (byName.get(name) ?? 0) + (node.hitCount ?? 0));
  }
  return {
    totalMs,
    top: [...byName]
      .sort((a, b) => b[1] - a[1])
      .slice(0, count)
      .map(([name, hits]) => ({ name, ms: (hits / samples) * totalMs, share: hits / samples })),
  };
}
