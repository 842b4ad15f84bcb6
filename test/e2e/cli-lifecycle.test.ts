import { spawn } from "node:child_process";
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { cleanEnv, freePort, removeHome, runCli, SPAR_BIN, tempHome } from "../helpers/daemon.js";

const homes: string[] = [];
/** Background daemons a test started: stopped here should the test fail before its own `spar stop`. */
const daemons: number[] = [];
afterEach(() => {
  for (const pid of daemons.splice(0)) {
    try {
      process.kill(pid, "SIGTERM");
    } catch {
      // Already stopped, as it should be.
    }
  }
  for (const home of homes.splice(0)) removeHome(home);
});

function newHome(): string {
  const home = join(tempHome(), "data");
  homes.push(join(home, ".."));
  return home;
}

describe("spar init", () => {
  it("creates the data dir, config, master key and CLI key pair without asking anything", async () => {
    const home = newHome();
    const result = await runCli(home, ["init"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`Set up Spar in ${home}`);
    expect(statSync(home).mode & 0o777).toBe(0o700);
    expect(readFileSync(join(home, "master.key"))).toHaveLength(32);
    for (const file of [
      "master.key",
      "config.toml",
      join("keys", "cli.key"),
      join("keys", "authorized", "cli.pub"),
    ]) {
      expect(statSync(join(home, file)).mode & 0o777).toBe(0o600);
    }
    expect(readFileSync(join(home, "keys", "cli.pub"), "utf8")).toMatch(/^-----BEGIN PUBLIC KEY-----/);
    // No provider key in the environment: the local runner.
    expect(readFileSync(join(home, "config.toml"), "utf8")).toMatch(/provider = "ollama"/);

    const again = await runCli(home, ["init"]);
    expect(again.stdout).toBe(`Spar is already set up in ${home} (default model: ollama / llama3.2)\n`);
  });

  it("picks the provider whose key it finds, in the environment or in .env", async () => {
    const fromEnv = newHome();
    await runCli(fromEnv, ["init"], { ANTHROPIC_API_KEY: "sk-ant-test" });
    const config = readFileSync(join(fromEnv, "config.toml"), "utf8");
    expect(config).toMatch(/provider = "anthropic"/);
    expect(config).toMatch(/api_key_env = "ANTHROPIC_API_KEY"/);
    expect(config).not.toContain("sk-ant-test");

    const fromDotEnv = tempHome();
    homes.push(fromDotEnv);
    writeFileSync(join(fromDotEnv, ".env"), "OPENAI_API_KEY=sk-from-dotenv\n", { mode: 0o600 });
    const json = await runCli(fromDotEnv, ["init", "--json"]);
    expect(JSON.parse(json.stdout).default_model).toMatchObject({
      provider: "openai",
      api_key_env: "OPENAI_API_KEY",
    });
  });

  it("does not write a master key beside a database that has lost its own", async () => {
    const home = newHome();
    await runCli(home, ["init"]);
    writeFileSync(join(home, "spar.db"), "pretend database");
    rmSync(join(home, "master.key"));
    await runCli(home, ["init"]);
    expect(existsSync(join(home, "master.key"))).toBe(false);
  });
});

describe("spar start --detach / stop", () => {
  it("runs the daemon in the background, refuses a second one on its data dir or its port, and stops it", async () => {
    const home = newHome();
    const port = await freePort();
    await runCli(home, ["init"]);
    const env = { SPAR_API_LISTEN: `127.0.0.1:${port}` };
    const started = await runCli(home, ["start", "--detach"], env);
    expect(started.code).toBe(0);
    expect(started.stdout).toMatch(/Spar started in the background \(pid \d+\)/);
    const pid = Number(readFileSync(join(home, "spar.pid"), "utf8"));
    daemons.push(pid);

    const status = await runCli(home, ["status"], env);
    expect(status.stdout).toMatch(/is running/);
    expect(status.stdout).toMatch(/spar\s+idle/);

    const twice = await runCli(home, ["start", "--detach"], env);
    expect(twice.code).toBe(1);
    expect(twice.stderr).toContain(`already running (pid ${pid})`);

    // Another data dir on the same port: that daemon's health answers 200, but the new one never
    // listened. The start waits for its own child and names the daemon holding the port.
    const other = newHome();
    await runCli(other, ["init"]);
    const taken = await runCli(other, ["start", "--detach"], env);
    expect(taken.stdout).toBe("");
    expect(taken.stderr).toMatch(
      /^spar: Spar did not start: .*port \d+ on 127\.0\.0\.1 is already in use by /,
    );
    expect(taken.stderr).toContain(`spar.js start (pid ${pid})`);
    expect(taken.stderr).toMatch(/\(PORT_IN_USE\)\n$/);
    expect(taken.code).toBe(1);
    expect(existsSync(join(other, "spar.pid"))).toBe(false);

    const stopped = await runCli(home, ["stop"], env);
    expect(stopped.stdout).toBe(`Spar stopped (pid ${pid})\n`);
    expect(existsSync(join(home, "spar.pid"))).toBe(false);
    const after = await runCli(home, ["status"], env);
    expect(after.code).toBe(1);
    expect(after.stderr).toMatch(
      /^spar: Spar is not running at http:\/\/127\.0\.0\.1:\d+; start it with: spar start/,
    );
  });

  it("starts at once after kill -9, while the dead daemon is still a zombie", async () => {
    const home = newHome();
    const port = await freePort();
    await runCli(home, ["init"]);
    const env = { SPAR_API_LISTEN: `127.0.0.1:${port}` };
    // The daemon's parent is a shell that execs sleep, which never reaps it: after kill -9 the daemon
    // stays a zombie (as under a supervisor slow to wait), with its pid still in spar.pid.
    const keeper = spawn(
      "sh",
      ["-c", `"$0" "$1" start >/dev/null 2>&1 & exec sleep 600`, process.execPath, SPAR_BIN],
      {
        env: { ...cleanEnv(), SPAR_HOME: home, ...env },
        stdio: "ignore",
      },
    );
    try {
      const pidFile = join(home, "spar.pid");
      await until(async () => existsSync(pidFile) && (await healthy(port)));
      const pid = Number(readFileSync(pidFile, "utf8"));
      process.kill(pid, "SIGKILL");
      await until(async () => processState(pid) === "Z");

      const started = await runCli(home, ["start", "--detach"], env);
      expect(started.stderr).toBe("");
      expect(started.stdout).toMatch(/Spar started in the background \(pid \d+\)/);
      expect(started.code).toBe(0);
      const stopped = await runCli(home, ["stop"], env);
      expect(stopped.code, stopped.stderr).toBe(0);
    } finally {
      keeper.kill("SIGKILL");
    }
  });

  it("stops cleanly on a SIGTERM sent the moment it answers health checks", async () => {
    const home = newHome();
    const port = await freePort();
    await runCli(home, ["init"]);
    const child = spawn(process.execPath, [SPAR_BIN, "start"], {
      env: { ...cleanEnv(), SPAR_HOME: home, SPAR_API_LISTEN: `127.0.0.1:${port}` },
      stdio: ["ignore", "pipe", "pipe"],
    });
    daemons.push(child.pid as number);
    let stdout = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
    });
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    await until(() => healthy(port));
    child.kill("SIGTERM");
    // Killed half-started, it would exit by the signal (code null) without its stop.
    expect(await exited).toBe(0);
    expect(stdout).toContain("Spar stopping (SIGTERM)");
  });

  it("refuses to start with a config key it does not know, naming the key", async () => {
    const home = newHome();
    await runCli(home, ["init"]);
    writeFileSync(join(home, "config.toml"), "[agent]\nmax_iteratons = 3\n");
    const result = await runCli(home, ["start"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('unknown key "agent.max_iteratons"');
  });

  it("prints one line and exits non-zero for an unknown command", async () => {
    const result = await runCli(newHome(), ["wrestle"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      'spar: unknown command "wrestle"; commands: init, start, stop, status, chat, context, bout, fighter, usage, gorilla, schedule, budgets, approvals, troop, channel, key, sign, ' +
        "rekey, doctor, backup, restore, plugin, logs, service, move, security (VALIDATION_FAILED)\n",
    );
  });
});

/** Polls `condition` until it holds; the test's own timeout bounds the wait. */
async function until(condition: () => Promise<boolean> | boolean): Promise<void> {
  while (!(await condition())) await new Promise((resolve) => setTimeout(resolve, 50));
}

async function healthy(port: number): Promise<boolean> {
  const response = await fetch(`http://127.0.0.1:${port}/api/v1/health`).catch(() => undefined);
  return response?.ok === true;
}

/** A process's state letter from /proc/<pid>/stat (`Z` for a zombie). */
function processState(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0];
  } catch {
    return undefined;
  }
}
