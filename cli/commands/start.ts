import { spawn } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createLogger } from "../../kernel/logger.js";
import { inspectMasterSecret, resolveHome, weakSecretFix, withDotEnv } from "../../lib/home.js";
import { secretWeakness } from "../../lib/secret-strength.js";
import { SparError } from "../../sdk/errors.js";
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
  warnOfWeakSecret(home);
  const daemon = await startDaemon(home);
  const fighters = (await daemon.ring.services.fighters.list()).length;
  const shutdown = (signal: string) => {
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
  // Before the line that says it listens: whoever waits for that line may signal at once.
  process.once("SIGINT", () => shutdown("SIGINT"));
  process.once("SIGTERM", () => shutdown("SIGTERM"));
  const { version } = daemon.ring.services;
  // With --json, one JSON object per line: this one, then {"stopping": signal}.
  process.stdout.write(
    options.json
      ? `${JSON.stringify({ listening: daemon.url, version, pid: process.pid, home, fighters, created: setup.created })}\n`
      : `Spar ${version} listening on ${daemon.url} (data: ${home}, fighters: ${fighters})\n`,
  );
}

/**
 * A weak secret is refused for a new database (readMasterSecret), but one an older Spar made with it
 * still opens, since refusing would lock the data away: it only earns a warning here.
 */
function warnOfWeakSecret(home: string): void {
  const facts = inspectMasterSecret(home, withDotEnv(home));
  const weakness = facts?.database_exists ? secretWeakness(facts.strength) : undefined;
  if (!facts || !weakness) return;
  createLogger().warn(`weak master secret: ${facts.source} ${weakness}. Fix: ${weakSecretFix(home, facts)}`);
}

/** Starts `spar start` as a background process logging to `<home>/spar.log`, and waits until it answers. */
async function detach(home: string, json: boolean): Promise<void> {
  const { assertDataDirFree, readPidFile } = await import("../daemon.js");
  const running = readPidFile(home);
  if (running) throw new SparError("CONFLICT", `Spar is already running (pid ${running})`);
  // A rekey or restore holding the data dir: say so here, not only in the log.
  assertDataDirFree(home, "daemon");
  const logPath = join(home, "spar.log");
  const log = openSync(logPath, "a", 0o600);
  const bin = fileURLToPath(new URL("../../../bin/spar.js", import.meta.url));
  const child = spawn(process.execPath, [bin, "start"], { detached: true, stdio: ["ignore", log, log] });
  closeSync(log);
  child.unref();
  const url = daemonUrl();
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) break;
    const response = await fetch(`${url}/api/v1/health`).catch(() => undefined); // not listening yet
    if (response?.ok) {
      if (json) return printJson({ started: true, pid: child.pid, url, log: logPath });
      process.stdout.write(`Spar started in the background (pid ${child.pid}) on ${url}; log: ${logPath}\n`);
      return;
    }
    // Up, but its store is damaged: say so now rather than wait for a health that will not come.
    if (response?.status === 503) {
      throw new SparError(
        "STORE_CORRUPT",
        `Spar started in the background (pid ${child.pid}) on ${url}, but its database is damaged; ` +
          `see ${logPath}, or run: spar doctor`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new SparError("DAEMON_UNREACHABLE", `Spar did not come up; see ${logPath}`);
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
