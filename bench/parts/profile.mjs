// --profile: CPU profiles (node --cpu-prof) of one daemon start (stopped as soon as it is healthy)
// and of a message burst (a daemon started, then 64 clients over 100 fighters; its profile holds its
// start too, early in the timeline), written to bench/profiles/<time>/ for Chrome DevTools
// (Performance → Load profile) or speedscope.
import { mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { topSelfTime } from "../suite/cpuprofile.mjs";
import { sparHome, startSpar } from "../suite/daemon.mjs";
import { pool } from "../suite/http.mjs";
import { startFakeModel } from "../suite/model.mjs";
import { spawnFighters, steadyMessage } from "../suite/spar-api.mjs";
import { num } from "../suite/stats.mjs";

const PROFILES = join(import.meta.dirname, "..", "profiles");

const cpuProf = (dir) => ["--cpu-prof", `--cpu-prof-dir=${dir}`];

const written = (dir) => readdirSync(dir).map((file) => join(dir, file));

export async function profile({ burst, fighters, clients }) {
  const stamp = new Date().toISOString().replaceAll(":", "-").replace(/\..*/, "");
  const startDir = join(PROFILES, stamp, "start");
  const burstDir = join(PROFILES, stamp, "message-burst");
  mkdirSync(startDir, { recursive: true });
  mkdirSync(burstDir, { recursive: true });
  const llm = await startFakeModel();
  const data = await sparHome({ llmUrl: llm.url, load: true });
  try {
    // A first start makes the database and the default fighter, so the profiled start is a normal one.
    await (await startSpar(data)).stop();
    const start = await startSpar(data, { nodeArgs: cpuProf(startDir) });
    await start.stop();

    const daemon = await startSpar(data, { nodeArgs: cpuProf(burstDir) });
    let rate;
    try {
      const { names } = await spawnFighters(daemon.api, "prof-", fighters);
      const ms = await pool(burst, clients, (i) => steadyMessage(daemon.api, names, i, "burst"));
      rate = burst / (ms / 1000);
    } finally {
      await daemon.stop();
    }
    const files = [...written(startDir), ...written(burstDir)];
    // The main thread's profile is the first of each dir (…0.001.cpuprofile; a worker's follow).
    const summary = (dir) => {
      const main = written(dir).sort()[0];
      if (!main) return ["no profile was written"];
      const { totalMs, top } = topSelfTime(main);
      return [
        `main thread ${num(totalMs)} ms profiled; most self time:`,
        ...top.map((t) => `  ${num(t.share * 100, 1).padStart(5)}%  ${num(t.ms).padStart(5)} ms  ${t.name}`),
      ];
    };
    return {
      title: "CPU profiles",
      notes: [
        `start: one \`spar start\` of an existing data dir, stopped once healthy (${num(start.healthyMs)} ms): ${startDir}`,
        `message burst: ${burst} messages from ${clients} clients over ${fighters} minimal fighters (${num(rate)} msg/s under the profiler): ${burstDir}`,
        ...files.map((file) => `written: ${file}`),
        ...summary(startDir).map((line) => `start: ${line}`),
        ...summary(burstDir).map((line) => `message burst: ${line}`),
        "one file per thread: the main thread's is the first of each pair (…0.001.cpuprofile), a worker's after it",
        "open a .cpuprofile in Chrome DevTools (Performance → Load profile) or https://www.speedscope.app",
      ],
      figures: [],
    };
  } finally {
    data.remove();
    await llm.close();
  }
}
