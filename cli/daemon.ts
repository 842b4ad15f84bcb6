import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { loadConfig } from "../kernel/host/config.js";
import { discoverPlugins, pluginRoots } from "../kernel/host/plugin-manifest.js";
import { createRing, type Ring } from "../kernel/ring.js";
import { readMasterSecret, withDotEnv } from "../lib/home.js";
import { createDaemonLog, secretValues } from "../lib/log-file.js";
import { isProcessAlive } from "../lib/process-alive.js";
import { parseListen } from "../sdk/config.js";
import { SparError } from "../sdk/errors.js";
import type { ListenRequest } from "../sdk/hooks.js";
import { KERNEL_VERSION } from "../sdk/version.js";

export interface RunningDaemon {
  ring: Ring;
  url: string;
  stop(): Promise<void>;
}

export const PID_FILE = "spar.pid";

export interface StartOptions {
  /**
   * Echo log entries on stderr as readable lines (default true: the foreground `spar start`, and
   * journald under systemd). A detached daemon's stderr is a file; its log is logs/spar.log already.
   */
  echo?: boolean;
  /** Warnings found before the start (a weak master secret), logged first. */
  warnings?: readonly string[];
}

/**
 * Starts the daemon in this process: config, plugins, store, default fighter, then the Arena. Any
 * failure leaves nothing half-started: what was opened is closed again and the pid file removed.
 * The daemon's environment is `env` over `<home>/.env`, held in memory and handed to the plugins
 * (`PluginApi.env`): process.env is left as the daemon was started with it, so .env's keys reach no
 * child process.
 */
export async function startDaemon(
  home: string,
  startEnv = process.env,
  options: StartOptions = {},
): Promise<RunningDaemon> {
  const env = withDotEnv(home, startEnv);
  const config = loadConfig(home, env);
  const listen = parseListen(config.api_listen);
  const log = createDaemonLog(home, {
    settings: config.logs,
    secrets: secretValues(env),
    ...(options.echo === false ? { echo: false as const } : {}),
  });
  log.file.info("starting", { version: KERNEL_VERSION, home, listen: config.api_listen });
  for (const warning of options.warnings ?? []) log.warn(warning);
  let ring: Ring;
  try {
    const plugins = discoverPlugins(pluginRoots(home, config.plugins.dirs), KERNEL_VERSION);
    ring = createRing({ config, home, env, version: KERNEL_VERSION, plugins, log });
    claimDataDir(home, "daemon");
  } catch (err) {
    log.file.error("start failed", { error: err instanceof Error ? err.message : String(err) });
    await log.close();
    throw err;
  }
  try {
    const secret = readMasterSecret(home, env);
    try {
      await ring.open(secret);
    } finally {
      secret.fill(0);
    }
    await ring.ensureDefaultFighter();
    // Every plugin is applied by now: the routes they add go to the Arena with the address.
    const routes: ListenRequest["routes"] = [];
    await ring.hooks.arena.routes.promise({ add: (route) => void routes.push(route) });
    await ring.hooks.daemon.ready.promise({ ...listen, routes });
  } catch (err) {
    log.file.error("start failed", { error: err instanceof Error ? err.message : String(err) });
    await ring.close().catch(() => undefined);
    releasePidFile(home);
    await log.close();
    throw err;
  }
  const host = listen.host.includes(":") ? `[${listen.host}]` : listen.host;
  // In the file only: the foreground `spar start` prints its own line for these.
  log.file.info("listening", { url: `http://${host}:${listen.port}` });
  let stopping: Promise<void> | undefined;
  return {
    ring,
    url: `http://${host}:${listen.port}`,
    stop() {
      stopping ??= Promise.resolve(log.file.info("stopping"))
        .then(() => ring.close())
        .finally(() => releasePidFile(home))
        .finally(() => {
          log.file.info("stopped");
          return log.close();
        });
      return stopping;
    },
  };
}

/**
 * Who holds a data dir through its pid file: the daemon, or a command that rewrites the database and
 * must have it alone (`spar rekey`, `spar restore`). A daemon starting meanwhile would meet a
 * half-rewritten database (or SQLITE_BUSY); a rekey during a daemon's run would pull its key away.
 */
export type DataDirHolder = "daemon" | "rekey" | "restore";

/**
 * Takes `<home>/spar.pid` for `holder`, atomically (a file only one process can create), taking over
 * one left by a process that is gone. Refused (CONFLICT) while a live process holds it, naming it and
 * what to do. Returns the release, which removes the file if it is still this process's.
 *
 * @example
 * const release = claimDataDir(home, "rekey");
 * try { await rotate(); } finally { release(); }
 */
export function claimDataDir(home: string, holder: DataDirHolder): () => void {
  const path = join(home, PID_FILE);
  // The daemon's line stays a bare pid, as scripts that read spar.pid expect.
  const line = holder === "daemon" ? `${process.pid}\n` : `${process.pid} ${holder}\n`;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      writeFileSync(path, line, { mode: 0o600, flag: "wx" });
      return () => releasePidFile(home);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    const held = readHolder(path);
    if (held && held.pid !== process.pid && isProcessAlive(held.pid)) throw busy(home, held, holder);
    // Left by a process that is gone (or by this one): take it over.
    rmSync(path, { force: true });
  }
  throw new SparError("CONFLICT", `could not take ${path}: another process keeps claiming it`);
}

function busy(home: string, held: { pid: number; holder: DataDirHolder }, wanted: DataDirHolder): SparError {
  if (held.holder === "daemon") {
    const then = wanted === "daemon" ? "" : `, then run spar ${wanted}`;
    return new SparError(
      "CONFLICT",
      `a Spar daemon (pid ${held.pid}) is ${wanted === "daemon" ? "already " : ""}running on ${home}; stop it first (spar stop)${then}`,
    );
  }
  const doing = held.holder === "rekey" ? "re-encrypting" : "restoring";
  const next = wanted === "daemon" ? "start Spar" : `run spar ${wanted}`;
  return new SparError(
    "CONFLICT",
    `spar ${held.holder} (pid ${held.pid}) is ${doing} the database in ${home} and holds ${join(home, PID_FILE)}; ${next} once it has finished`,
  );
}

/** The pid file's holder: `<pid>` for the daemon, `<pid> <command>` for the others. */
function readHolder(path: string): { pid: number; holder: DataDirHolder } | undefined {
  try {
    const [pidText, holder = "daemon"] = readFileSync(path, "utf8").trim().split(/\s+/);
    const pid = Number(pidText);
    if (!Number.isInteger(pid) || pid <= 0) return undefined;
    return { pid, holder: holder === "rekey" || holder === "restore" ? holder : "daemon" };
  } catch {
    return undefined;
  }
}

function releasePidFile(home: string): void {
  const path = join(home, PID_FILE);
  if (readHolder(path)?.pid === process.pid) rmSync(path, { force: true });
}

/** Refuses (CONFLICT, naming the holder) when a live process holds the data dir, as `claimDataDir` would. */
export function assertDataDirFree(home: string, wanted: DataDirHolder): void {
  const held = readHolder(join(home, PID_FILE));
  if (held && held.pid !== process.pid && isProcessAlive(held.pid)) throw busy(home, held, wanted);
}

/** The pid of the daemon running on `home`, if one is (a rekey or restore holding the dir is not one). */
export function readPidFile(home: string): number | undefined {
  const held = readHolder(join(home, PID_FILE));
  return held?.holder === "daemon" && isProcessAlive(held.pid) ? held.pid : undefined;
}
