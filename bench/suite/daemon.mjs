// Starting servers for the benchmarks: any process that answers a health URL (the Spar daemon, the
// fastify yardstick, OpenClaw's gateway), timed from spawn to its first 200, and stopped by SIGTERM.
import { spawn } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "./http.mjs";
import { rssMiB, treeRssMiB } from "./proc.mjs";
import { sleep } from "./stats.mjs";

export const ROOT = join(import.meta.dirname, "..", "..");
export const SPAR_BIN = join(ROOT, "bin", "spar.js");

/** Limits raised so that quotas, the API's rate limit and reflection calls do not shape a load run. */
export const LOAD_TOML = `[quotas]
requests_per_minute = 100000000
tokens_per_minute = 100000000000
[api]
rate_limit_per_minute = 1000000000
max_connections = 100000
[creed]
reflect = false
`;

/** LOAD_TOML on one line: "[quotas] requests_per_minute = …, …; [api] …". */
export const LOAD_SUMMARY = LOAD_TOML.trim()
  .split(/\n(?=\[)/)
  .map((table) => table.replace("\n", " ").replaceAll("\n", ", "))
  .join("; ");

export function freePort() {
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Every process started here, so that an interrupted run leaves none behind. */
const running = new Map();
process.once("exit", () => {
  for (const [child, group] of running) {
    try {
      if (group) process.kill(-child.pid, "SIGKILL");
      else child.kill("SIGKILL");
    } catch {
      // already gone
    }
  }
});
// Ctrl-C: exit through the handler above (a process group of our own does not get the terminal's signal).
process.once("SIGINT", () => process.exit(130));

/**
 * Spawns `command args`, polls `healthUrl` every 5 ms until it answers 200, and resolves with the
 * time that took (`until200(url)` times another URL the same way, from the same spawn). stdout and
 * stderr go to `logFile`, shown (its tail) when the process fails. `group`: the process leads a
 * process group, and stop() signals the whole group (a server that starts helper processes).
 */
export async function launch({
  command = process.execPath,
  args,
  env = {},
  healthUrl,
  logFile,
  timeoutMs = 60_000,
  group = false,
}) {
  const log = openSync(logFile, "a");
  const started = performance.now();
  const child = spawn(command, args, {
    env: { ...process.env, ...env },
    stdio: ["ignore", log, log],
    detached: group,
  });
  closeSync(log);
  running.set(child, group);
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  child.once("exit", () => running.delete(child));
  const tail = () => {
    try {
      return readFileSync(logFile, "utf8").split("\n").slice(-15).join("\n");
    } catch {
      return "(no log)";
    }
  };
  /** Polls `url` every 5 ms until it answers 200; the ms from spawn to then. */
  const until200 = async (url) => {
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new Error(
          `${args.join(" ")} exited (${child.exitCode ?? child.signalCode}) before ${url} answered 200:\n${tail()}`,
        );
      }
      if (performance.now() - started > timeoutMs) {
        signal("SIGKILL");
        throw new Error(`${url} did not answer 200 within ${timeoutMs} ms of the start:\n${tail()}`);
      }
      try {
        if ((await request(url)).status === 200) return performance.now() - started;
      } catch {
        // not listening yet
      }
      await sleep(5);
    }
  };
  const signal = (s) => {
    try {
      if (group) process.kill(-child.pid, s);
      else child.kill(s);
    } catch {
      // already gone
    }
  };
  const healthyMs = await until200(healthUrl);
  return {
    child,
    pid: child.pid,
    healthyMs,
    until200,
    tail,
    rss: () => rssMiB(child.pid),
    treeRss: () => treeRssMiB(child.pid),
    /** SIGTERM (to the process group when `group`), then SIGKILL after `graceMs`. */
    async stop(graceMs = 15_000) {
      if (child.exitCode !== null || child.signalCode !== null) return exited;
      signal("SIGTERM");
      const timer = setTimeout(() => signal("SIGKILL"), graceMs);
      const result = await exited;
      clearTimeout(timer);
      return result;
    },
  };
}

/** A fresh Spar data dir whose config points the default model at `llmUrl`; `load` raises the limits. */
export async function sparHome({ llmUrl, load = false, extraToml = "" }) {
  const port = await freePort();
  const home = mkdtempSync(join(tmpdir(), "spar-bench-"));
  writeFileSync(
    join(home, "config.toml"),
    `api_listen = "127.0.0.1:${port}"\n` +
      `[default_model]\nprovider = "openai_compatible"\nmodel = "m"\nbase_url = "${llmUrl}"\n` +
      `${load ? LOAD_TOML : ""}${extraToml}`,
  );
  return {
    home,
    port,
    url: `http://127.0.0.1:${port}`,
    remove: () => rmSync(home, { recursive: true, force: true }),
  };
}

/**
 * `spar start` in a data dir made by sparHome (a first start runs init and spawns the default
 * fighter). `nodeArgs` go to node before the CLI (e.g. --cpu-prof). Resolves once healthy.
 */
export async function startSpar(data, { nodeArgs = [], bin = SPAR_BIN } = {}) {
  const daemon = await launch({
    args: [...nodeArgs, bin, "start"],
    env: { SPAR_HOME: data.home },
    healthUrl: `${data.url}/api/v1/health`,
    logFile: join(data.home, "bench-daemon.log"),
  });
  return { ...daemon, url: data.url, api: `${data.url}/api/v1` };
}

/** A fake model, a data dir and a started daemon in one, for the parts that need all three. */
export async function withSpar(llmUrl, options, body) {
  const data = await sparHome({ llmUrl, ...options });
  let daemon;
  try {
    daemon = await startSpar(data, options);
    return await body(daemon, data);
  } finally {
    await daemon?.stop();
    data.remove();
  }
}
