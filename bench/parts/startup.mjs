// 1. Start → healthy and idle RSS of `spar start` beside a bare fastify server, and the wall time of
// `spar --help` and `spar --version` beside `node -e 0`. Runs are interleaved (spar, then fastify,
// in each round) so that a drift of the machine touches both sides alike.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, launch, SPAR_BIN, sparHome, startSpar } from "../suite/daemon.mjs";
import { startFakeModel } from "../suite/model.mjs";
import { figure } from "../suite/report.mjs";
import { median, medianSpread, sleep } from "../suite/stats.mjs";

const IDLE_MS = 2000;
const FASTIFY = join(import.meta.dirname, "..", "fastify-hello.mjs");

async function sparOnce(data) {
  const daemon = await startSpar(data);
  await sleep(IDLE_MS);
  const rss = daemon.rss();
  await daemon.stop();
  return { ms: daemon.healthyMs, rss };
}

async function fastifyOnce(logFile) {
  const port = await freePort();
  const server = await launch({
    args: [FASTIFY, String(port)],
    healthUrl: `http://127.0.0.1:${port}/api/v1/health`,
    logFile,
  });
  await sleep(IDLE_MS);
  const rss = server.rss();
  await server.stop();
  return { ms: server.healthyMs, rss };
}

/** Wall time of one command to its exit, in ms; it must exit 0. */
function wall(args, env = {}) {
  const started = performance.now();
  const result = spawnSync(process.execPath, args, { stdio: "ignore", env: { ...process.env, ...env } });
  const ms = performance.now() - started;
  if (result.status !== 0) throw new Error(`node ${args.join(" ")} exited with ${result.status}`);
  return ms;
}

function ratioFigure(label, xs, baseLabel, base, unit, goal, limit, digits = 0) {
  const ratio = median(xs) / median(base);
  return figure({
    label,
    measured: medianSpread(xs, unit, digits),
    baseline: `${baseLabel} ${medianSpread(base, unit, digits)}`,
    ratio,
    goal: `≤ ${limit}× ${goal}`,
    met: ratio <= limit,
  });
}

export async function startup({ runs, cliRuns }) {
  const llm = await startFakeModel();
  const data = await sparHome({ llmUrl: llm.url });
  const spar = [];
  const fastify = [];
  try {
    // The first start runs init: a new encrypted database and the default fighter. Not timed.
    await (await startSpar(data)).stop();
    for (let i = 0; i < runs; i++) {
      spar.push(await sparOnce(data));
      fastify.push(await fastifyOnce(join(data.home, "fastify.log")));
    }
  } finally {
    data.remove();
    await llm.close();
  }
  const help = [];
  const version = [];
  const empty = [];
  // An empty data dir, so that neither command reads ~/.spar (nor should it read any).
  const cliHome = mkdtempSync(join(tmpdir(), "spar-bench-cli-"));
  try {
    for (let i = 0; i < cliRuns; i++) {
      help.push(wall([SPAR_BIN, "--help"], { SPAR_HOME: cliHome }));
      version.push(wall([SPAR_BIN, "--version"], { SPAR_HOME: cliHome }));
      empty.push(wall(["-e", "0"]));
    }
  } finally {
    rmSync(cliHome, { recursive: true, force: true });
  }
  const ms = (xs) => xs.map((x) => x.ms);
  const rss = (xs) => xs.map((x) => x.rss);
  return {
    title: "1. Startup",
    notes: [
      `${runs} starts each, interleaved; an existing data dir (encrypted database, default fighter made by a first, untimed start)`,
      "start → healthy: from spawn to the first 200 from GET /api/v1/health, polled every 5 ms",
      `idle RSS: VmRSS of the process ${IDLE_MS / 1000} s after it was healthy`,
      `CLI wall time: ${cliRuns} runs each of spar --help, spar --version and node -e 0, interleaved, spawn to exit, SPAR_HOME an empty dir`,
    ],
    figures: [
      ratioFigure("spar start → healthy", ms(spar), "fastify hello", ms(fastify), "ms", "fastify", 1.5),
      ratioFigure("spar idle RSS", rss(spar), "fastify hello", rss(fastify), "MiB", "fastify", 1.5, 1),
      ratioFigure("spar --help wall time", help, "node -e 0", empty, "ms", "node -e 0", 1.2),
      ratioFigure("spar --version wall time", version, "node -e 0", empty, "ms", "node -e 0", 1.2),
    ],
  };
}
