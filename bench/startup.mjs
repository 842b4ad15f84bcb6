// Start→healthy time and idle RSS of the built daemon, beside a bare fastify hello server and a bare
// node http server measured the same way, runs interleaved. After `npm run build`:
//   node bench/startup.mjs [--runs N] [--bin path/to/bin/spar.js ...]
// Each run: spawn the process, poll GET /api/v1/health every 5 ms until it answers 200 (that is the
// start time), wait 2 s idle, read VmRSS from /proc (the process and its children), stop it. The
// Spar data dir is initialized (`spar init`) and started and stopped once beforehand, so runs
// measure a normal start: an existing encrypted database and the default fighter.
import { spawn } from "node:child_process";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import {
  binLabel,
  fmtSpread,
  freePort,
  isMain,
  prepareHome,
  printRows,
  row,
  rssMiB,
  SPAR_BIN,
  sleep,
  sparInit,
  spread,
  startMiniLlm,
  waitHealthy,
} from "./lib.mjs";

const IDLE_MS = 2000;

/** Spawns `node args`, times start→healthy, reads RSS after IDLE_MS idle, stops it. */
export async function measureStart(args, env, port, healthPath = "/api/v1/health") {
  const started = performance.now();
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: "ignore" });
  try {
    const healthyMs = await waitHealthy(`http://127.0.0.1:${port}${healthPath}`, child, started);
    await sleep(IDLE_MS);
    return { healthyMs, rss: rssMiB(child.pid) };
  } finally {
    const exited = new Promise((r) => child.once("exit", r));
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    await exited;
  }
}

const fastifyHello = async () => {
  const port = await freePort();
  return { args: [join(import.meta.dirname, "fastify-hello.mjs"), String(port)], env: {}, port };
};

const bareNode = async () => {
  const port = await freePort();
  const code = `require("http").createServer((q,s)=>s.end("{}")).listen(${port},"127.0.0.1")`;
  return { args: ["-e", code], env: {}, port };
};

/** The figures: per build, start→healthy and idle RSS against fastify hello and bare node http. */
export async function startup({ runs = 5, bins = [SPAR_BIN] } = {}) {
  const llm = await startMiniLlm();
  const homes = [];
  try {
    const spars = [];
    for (const bin of bins) {
      const { home, port } = await prepareHome(llm.url);
      homes.push(home);
      sparInit(home, bin);
      const launch = { args: [bin, "start"], env: { SPAR_HOME: home }, port };
      await measureStart(launch.args, launch.env, launch.port); // the first start: not counted
      spars.push({ bin, launch, results: [] });
    }
    const fastify = [];
    const node = [];
    for (let i = 0; i < runs; i++) {
      for (const s of spars) s.results.push(await measureStart(s.launch.args, s.launch.env, s.launch.port));
      const f = await fastifyHello();
      fastify.push(await measureStart(f.args, f.env, f.port));
      const n = await bareNode();
      node.push(await measureStart(n.args, n.env, n.port));
    }
    const of = (results, key) => spread(results.map((r) => r[key]));
    const fStart = of(fastify, "healthyMs");
    const nStart = of(node, "healthyMs");
    const fRss = of(fastify, "rss");
    const nRss = of(node, "rss");
    const rows = [];
    for (const s of spars) {
      const label = binLabel(s.bin, bins);
      const start = of(s.results, "healthyMs");
      const rss = of(s.results, "rss");
      rows.push(
        row(`start → healthy, vs fastify hello${label}`, fmtSpread(start, "ms"), fmtSpread(fStart, "ms"), {
          ratio: start.median / fStart.median,
          goal: "≤1.5×",
          met: start.median / fStart.median <= 1.5,
        }),
        row(`start → healthy, vs bare node http${label}`, fmtSpread(start, "ms"), fmtSpread(nStart, "ms"), {
          ratio: start.median / nStart.median,
        }),
        row(
          `idle RSS after 2 s, vs fastify hello${label}`,
          fmtSpread(rss, "MiB", 1),
          fmtSpread(fRss, "MiB", 1),
          {
            ratio: rss.median / fRss.median,
            goal: "≤1.5×",
            met: rss.median / fRss.median <= 1.5,
          },
        ),
        row(
          `idle RSS after 2 s, vs bare node http${label}`,
          fmtSpread(rss, "MiB", 1),
          fmtSpread(nRss, "MiB", 1),
          {
            ratio: rss.median / nRss.median,
          },
        ),
      );
    }
    rows[0].note = `median (min–max) of ${runs} starts each, interleaved; health polled every 5 ms`;
    return rows;
  } finally {
    llm.close();
    for (const home of homes) rmSync(home, { recursive: true, force: true });
  }
}

if (isMain(import.meta)) {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { runs: { type: "string" }, bin: { type: "string", multiple: true } },
  });
  // `node bench/startup.mjs 7` (the old form) still sets the number of runs.
  const runs = Number(values.runs ?? positionals[0] ?? 5);
  console.log(`node ${process.version}, ${runs} runs each\n`);
  printRows(await startup({ runs, bins: values.bin?.length ? values.bin : [SPAR_BIN] }));
}
