import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { loadConfig, parseListen } from "../kernel/config.js";
import { SparError } from "../kernel/errors.js";
import type { ListenRequest } from "../kernel/hooks.js";
import { createLogger } from "../kernel/logger.js";
import { discoverPlugins, pluginRoots } from "../kernel/plugin-manifest.js";
import { createRing, type Ring } from "../kernel/ring.js";
import { KERNEL_VERSION } from "../kernel/version.js";
import { loadDotEnv, readMasterSecret } from "../lib/home.js";

export interface RunningDaemon {
  ring: Ring;
  url: string;
  stop(): Promise<void>;
}

export const PID_FILE = "spar.pid";

/**
 * Starts the daemon in this process: config, plugins, store, default fighter, then the Arena. Any
 * failure leaves nothing half-started: what was opened is closed again and the pid file removed.
 */
export async function startDaemon(home: string, env = process.env): Promise<RunningDaemon> {
  loadDotEnv(home, env);
  const config = loadConfig(home, env);
  const listen = parseListen(config.api_listen);
  const log = createLogger();
  const plugins = discoverPlugins(pluginRoots(home, config.plugins.dirs), KERNEL_VERSION);
  const ring = createRing({ config, home, version: KERNEL_VERSION, plugins, log });
  claimPidFile(home);
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
    await ring.close().catch(() => undefined);
    releasePidFile(home);
    throw err;
  }
  const host = listen.host.includes(":") ? `[${listen.host}]` : listen.host;
  let stopping: Promise<void> | undefined;
  return {
    ring,
    url: `http://${host}:${listen.port}`,
    stop() {
      stopping ??= ring.close().finally(() => releasePidFile(home));
      return stopping;
    },
  };
}

/** One daemon per data dir: a second one would fight the first over the database. */
function claimPidFile(home: string): void {
  const path = join(home, PID_FILE);
  if (existsSync(path)) {
    const pid = Number(readFileSync(path, "utf8").trim());
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && isAlive(pid)) {
      throw new SparError(
        "CONFLICT",
        `a Spar daemon (pid ${pid}) is already running on ${home}; stop it first (spar stop)`,
      );
    }
  }
  writeFileSync(path, `${process.pid}\n`, { mode: 0o600 });
}

function releasePidFile(home: string): void {
  const path = join(home, PID_FILE);
  try {
    if (Number(readFileSync(path, "utf8").trim()) === process.pid) rmSync(path);
  } catch {
    // Already gone.
  }
}

export function readPidFile(home: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(home, PID_FILE), "utf8").trim());
    return Number.isInteger(pid) && pid > 0 && isAlive(pid) ? pid : undefined;
  } catch {
    return undefined;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
