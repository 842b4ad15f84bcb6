import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, existsSync, mkdirSync, openSync, renameSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { inspectMasterSecret, resolveHome, weakSecretFix, withDotEnv } from "../../lib/home.js";
import { LOGS_DIR, logFilePath } from "../../lib/log-file.js";
import { secretWeakness } from "../../lib/secret-strength.js";
import { ERROR_CATALOG, type ErrorCode, type ErrorExtra, isSparError, SparError } from "../../sdk/errors.js";
import { daemonUrl } from "../client.js";
import { type GlobalOptions, printJson } from "../output.js";
import { initHome } from "./init-home.js";

/** `spar start`: foreground by default; Ctrl-C (SIGINT) or SIGTERM stops it cleanly. */
export async function start(options: GlobalOptions & { detach?: boolean }): Promise<void> {
  const home = resolveHome();
  const setup = initHome(home);
  if (setup.created.includes("config.toml") && !options.json) {
    process.stdout.write(`Set up Spar in ${home} (default model: ${setup.default_model.provider})\n`);
  }
  if (options.detach) return detach(home, options.json === true);

  const { startDaemon } = await import("../daemon.js");
  // Before the daemon starts: it answers health checks before its start is over (gorillas load after
  // it listens), and a supervisor may signal as soon as it does. A first signal in the meantime stops
  // the daemon cleanly once it has started; a second one (a start that hangs) quits at once.
  let daemon: Awaited<ReturnType<typeof startDaemon>> | undefined;
  let requested: string | undefined;
  let stopping = false;
  const shutdown = (signal: string) => {
    if (!daemon) {
      if (requested) process.exit(130);
      requested = signal;
      process.stderr.write(`spar: stopping once started (${signal}); again to quit now\n`);
      return;
    }
    // A second signal while stopping quits at once (every acknowledged message is already on disk).
    if (stopping) process.exit(130);
    stopping = true;
    process.stdout.write(
      options.json ? `${JSON.stringify({ stopping: signal })}\n` : `Spar stopping (${signal})\n`,
    );
    daemon.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`spar: shutdown failed: ${(err as Error).message}\n`);
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", () => shutdown("SIGINT"));
  process.on("SIGTERM", () => shutdown("SIGTERM"));
  // SPAR_LOG_STDERR=0 (set by `spar start --detach` and the launchd agent, whose stderr is a file):
  // the log is logs/spar.log already, so entries are not copied to stderr as readable lines too.
  const echo = process.env.SPAR_LOG_STDERR !== "0";
  daemon = await startDaemon(home, process.env, { echo, warnings: weakSecretWarning(home) }).catch(
    (err: unknown) => {
      tellParent(isSparError(err) ? err.toJSON() : { error: { code: "INTERNAL", message: String(err) } });
      throw err;
    },
  );
  const fighters = (await daemon.ring.services.fighters.list()).length;
  const { version } = daemon.ring.services;
  // With --json, one JSON object per line: this one, then {"stopping": signal}.
  process.stdout.write(
    options.json
      ? `${JSON.stringify({ listening: daemon.url, version, pid: process.pid, home, fighters, created: setup.created })}\n`
      : `Spar ${version} listening on ${daemon.url} (data: ${home}, fighters: ${fighters})\n`,
  );
  tellParent({ listening: daemon.url, pid: process.pid });
  if (requested) shutdown(requested);
}

/** What a daemon started by `spar start --detach` tells the command that started it, over IPC. */
type StartOutcome = { listening: string; pid: number } | { error: { code: string; message: string } };

/**
 * Tells `spar start --detach` (this process's parent, when it started it with an IPC channel) that
 * the daemon listens or why it could not, then lets the channel go, so the parent can exit and the
 * daemon does not wait on it.
 */
function tellParent(outcome: StartOutcome): void {
  if (!process.send || !process.connected) return;
  // A parent gone meanwhile (Ctrl-C) makes the send fail: nothing to tell then.
  process.send(outcome, undefined, {}, () => {
    if (process.connected) process.disconnect();
  });
}

/**
 * A weak secret is refused for a new database (readMasterSecret), but one an older Spar made with it
 * still opens, since refusing would lock the data away: it only earns a warning here.
 */
function weakSecretWarning(home: string): string[] {
  const facts = inspectMasterSecret(home, withDotEnv(home));
  const weakness = facts?.database_exists ? secretWeakness(facts.strength) : undefined;
  if (!facts || !weakness) return [];
  return [`weak master secret: ${facts.source} ${weakness}. Fix: ${weakSecretFix(home, facts)}`];
}

/**
 * Starts `spar start` as a background process and waits for that process itself to say it listens
 * (over an IPC channel), or why it could not: a health answer on the port proves nothing, since
 * another daemon may hold it (PORT_IN_USE, naming the holder). The daemon logs to logs/spar.log;
 * its stdout and stderr (its start line, and anything it prints should it crash) go to
 * logs/spar.out.
 */
async function detach(home: string, json: boolean): Promise<void> {
  const { assertDataDirFree, readPidFile } = await import("../daemon.js");
  const running = readPidFile(home);
  if (running) throw new SparError("CONFLICT", `Spar is already running (pid ${running})`);
  // A rekey or restore holding the data dir: say so here, not only in the log.
  assertDataDirFree(home, "daemon");
  const logPath = logFilePath(home);
  const outPath = detachedOutput(home);
  const log = openSync(outPath, "a", 0o600);
  const bin = fileURLToPath(new URL("../../../bin/spar.js", import.meta.url));
  const child = spawn(process.execPath, [bin, "start"], {
    detached: true,
    stdio: ["ignore", log, log, "ipc"],
    env: { ...process.env, SPAR_LOG_STDERR: "0" },
  });
  closeSync(log);
  const outcome = await startOutcome(child, 30_000);
  if (child.connected) child.disconnect();
  child.unref();
  if (outcome === "timeout")
    throw new SparError("DAEMON_UNREACHABLE", `Spar did not come up in 30 s; see ${logPath} and ${outPath}`);
  if (outcome === "exited") {
    throw new SparError(
      "DAEMON_UNREACHABLE",
      `Spar exited (code ${child.exitCode}) before it listened; see ${outPath}`,
    );
  }
  if ("error" in outcome) {
    const { code, message, ...extra } = outcome.error;
    const known = code in ERROR_CATALOG ? (code as ErrorCode) : "INTERNAL";
    throw new SparError(known, `Spar did not start: ${message} (log: ${logPath})`, extra as ErrorExtra);
  }
  // As the other commands reach it (a wildcard listen address is asked on loopback).
  const url = daemonUrl();
  // Up, but its store is damaged: say so now rather than leave it to the first request.
  const response = await fetch(`${url}/api/v1/health`).catch(() => undefined);
  if (response?.status === 503) {
    throw new SparError(
      "STORE_CORRUPT",
      `Spar started in the background (pid ${child.pid}) on ${url}, but its database is damaged; ` +
        `see ${logPath}, or run: spar doctor`,
    );
  }
  if (json) return printJson({ started: true, pid: child.pid, url, log: logPath });
  process.stdout.write(`Spar started in the background (pid ${child.pid}) on ${url}; log: ${logPath}\n`);
}

/**
 * `<home>/logs/spar.out`, where a detached daemon's stdout and stderr go. Before the JSON log,
 * `spar start --detach` wrote them to `<home>/spar.log`: such a file is moved here (once, when
 * there is no spar.out yet), so what it holds stays beside the rest of the daemon's output.
 */
function detachedOutput(home: string): string {
  const dir = join(home, LOGS_DIR);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const out = join(dir, "spar.out");
  const old = join(home, "spar.log");
  if (existsSync(old) && !existsSync(out)) renameSync(old, out);
  return out;
}

/** The child's word on its start, or that it exited without one, or that none came in time. */
function startOutcome(child: ChildProcess, timeoutMs: number): Promise<StartOutcome | "exited" | "timeout"> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve("timeout"), timeoutMs);
    const settle = (value: StartOutcome | "exited") => {
      clearTimeout(timer);
      resolve(value);
    };
    child.once("message", (message) => settle(message as StartOutcome));
    child.once("exit", () => settle("exited"));
  });
}

/** `spar stop`: SIGTERM to the pid in the pid file, then wait for it to exit. */
export async function stop(options: GlobalOptions): Promise<void> {
  const home = resolveHome();
  const { readPidFile } = await import("../daemon.js");
  const pid = readPidFile(home);
  if (!pid) throw new SparError("DAEMON_UNREACHABLE", `no Spar daemon is running on ${home}`);
  process.kill(pid, "SIGTERM");
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline && readPidFile(home)) await new Promise((resolve) => setTimeout(resolve, 100));
  if (readPidFile(home)) throw new SparError("INTERNAL", `Spar (pid ${pid}) did not stop within 15 s`);
  if (options.json) return printJson({ stopped: true, pid });
  process.stdout.write(`Spar stopped (pid ${pid})\n`);
}
