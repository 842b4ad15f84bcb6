// Start→healthy time and idle RSS of the built daemon, beside a bare fastify hello server measured
// the same way. Run after `npm run build`:  node bench/startup.mjs [runs]
// Each run: spawn the process, poll GET /api/v1/health every 5 ms until it answers 200 (that is the
// start time), wait 2 s idle, read VmRSS from /proc, stop it. The Spar data dir is initialized and
// started once beforehand, so runs measure a normal start (existing encrypted DB, default fighter).
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

const runs = Number(process.argv[2] ?? 7);
const root = join(import.meta.dirname, "..");
const spar = join(root, "bin", "spar.js");

function freePort() {
  return new Promise((done) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => done(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function rssMiB(pid) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? Number.NaN) / 1024;
}

async function measure(args, env, port) {
  const started = performance.now();
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: "ignore" });
  let healthyMs;
  while (healthyMs === undefined) {
    if (child.exitCode !== null) throw new Error(`${args.join(" ")} exited with ${child.exitCode}`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/api/v1/health`);
      if (res.ok) healthyMs = performance.now() - started;
    } catch {
      await sleep(5);
    }
  }
  await sleep(2000);
  const rss = rssMiB(child.pid);
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  await exited;
  return { healthyMs, rss };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

async function series(name, prepare) {
  const results = [];
  for (let i = 0; i < runs; i++) {
    const { args, env, port } = await prepare();
    results.push(await measure(args, env, port));
  }
  const ms = results.map((r) => r.healthyMs);
  const rss = results.map((r) => r.rss);
  console.log(
    `${name.padEnd(22)} start→healthy median ${median(ms).toFixed(0).padStart(5)} ms ` +
      `(min ${Math.min(...ms).toFixed(0)}, max ${Math.max(...ms).toFixed(0)})   ` +
      `idle RSS median ${median(rss).toFixed(1).padStart(6)} MiB (min ${Math.min(...rss).toFixed(1)}, max ${Math.max(...rss).toFixed(1)})`,
  );
}

const home = mkdtempSync(join(tmpdir(), "spar-bench-"));
try {
  console.log(`node ${process.version}, ${runs} runs each\n`);
  const port = await freePort();
  writeFileSync(join(home, "config.toml"), `api_listen = "127.0.0.1:${port}"\n`);
  const env = { SPAR_HOME: home };
  await measure([spar, "start"], env, port); // first start: init, new database, default fighter
  await series("spar start", async () => ({ args: [spar, "start"], env, port }));
  await series("fastify hello", async () => {
    const p = await freePort();
    return { args: [join(import.meta.dirname, "fastify-hello.mjs"), String(p)], env: {}, port: p };
  });
  await series("node -e (empty loop)", async () => {
    const p = await freePort();
    const code = `require("http").createServer((q,s)=>s.end("{}")).listen(${p},"127.0.0.1")`;
    return { args: ["-e", code], env: {}, port: p };
  });
} finally {
  rmSync(home, { recursive: true, force: true });
}
