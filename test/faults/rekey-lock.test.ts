/**
 * `spar rekey` and `spar restore` hold the data dir's lock (spar.pid) for their whole run, with the
 * real CLI: each is paused (SIGSTOP) the moment it holds the lock, so the window is certain, and a
 * `spar start` then is refused naming the command and its pid, the database untouched; resumed, the
 * command finishes, lets the lock go, and the daemon starts and reads the data. A lock left by a
 * process that is gone blocks nothing.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  freePort,
  removeHome,
  runCli,
  SPAR_BIN,
  startDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";
import { figure, until } from "./lib.js";

const ENV = { OPENAI_API_KEY: "sk-test-secret-0000" };

function cleanEnv(home: string): NodeJS.ProcessEnv {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !/^(SPAR_|OPENAI_)/.test(k) && k !== "NODE_OPTIONS"),
  );
  return { ...env, ...ENV, SPAR_HOME: home };
}

/** Runs the CLI as a child, collecting its output; `exit` resolves with its code. */
function cli(home: string, args: string[]) {
  const child: ChildProcess = spawn(process.execPath, [SPAR_BIN, ...args], {
    env: cleanEnv(home),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (d: Buffer) => {
    output += d.toString();
  });
  child.stderr?.on("data", (d: Buffer) => {
    output += d.toString();
  });
  const exit = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
  return { child, exit, output: () => output };
}

/** Polls spar.pid until `pid <holder>` is in it (the command holds the lock). */
async function heldBy(home: string, holder: string, pid: number | undefined): Promise<boolean> {
  return until(
    `spar ${holder} to take ${join(home, "spar.pid")}`,
    async () => {
      try {
        return readFileSync(join(home, "spar.pid"), "utf8").trim() === `${pid} ${holder}`;
      } catch {
        return false;
      }
    },
    30_000,
  );
}

describe("spar rekey and spar restore hold the data dir's lock", () => {
  let fake: FakeOpenAI;
  let home: string;
  let port: number;
  let refused = 0;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    port = await freePort();
    writeConfig(home, port, fake.url, "\n[creed]\nreflect = false\n");
    const daemon = await startDaemon(home, port);
    expect((await daemon.request("POST", "/api/v1/fighters/spar/message", { message: "kept" })).status).toBe(
      200,
    );
    expect(await daemon.stop()).toBe(0);
  }, 60_000);

  afterAll(async () => {
    await fake?.close();
    if (home) removeHome(home);
  });

  /** Pauses `command` once it holds the lock, checks `spar start` is refused, resumes it to the end. */
  async function startDuring(args: string[], holder: "rekey" | "restore", says: string) {
    const command = cli(home, args);
    try {
      await heldBy(home, holder, command.child.pid);
      command.child.kill("SIGSTOP");
      const db = readFileSync(join(home, "spar.db"));
      const start = cli(home, ["start"]);
      const code = await start.exit;
      expect(code).not.toBe(0);
      expect(start.output()).toContain(
        `spar ${holder} (pid ${command.child.pid}) is ${says} the database in ${home} and holds ${join(home, "spar.pid")}; start Spar once it has finished`,
      );
      expect(start.output()).not.toContain("listening on");
      // In the background too: refused at once with the same words, not "did not come up".
      const detached = cli(home, ["start", "--detach"]);
      expect(await detached.exit).not.toBe(0);
      expect(detached.output()).toContain(
        `spar ${holder} (pid ${command.child.pid}) is ${says} the database`,
      );
      expect(readFileSync(join(home, "spar.db")).equals(db)).toBe(true);
      refused++;
    } finally {
      command.child.kill("SIGCONT");
    }
    expect(await command.exit, command.output()).toBe(0);
    expect(existsSync(join(home, "spar.pid"))).toBe(false);
  }

  /** The daemon starts and still has the message written before. */
  async function dataReadable() {
    const daemon = await startDaemon(home, port);
    try {
      const bouts = await daemon.request<{ bouts: { id: string }[] }>("GET", "/api/v1/fighters/spar/bouts");
      const texts: string[] = [];
      for (const b of bouts.body.bouts) {
        const listed = await daemon.request<{ messages: { content: string }[] }>(
          "GET",
          `/api/v1/bouts/${b.id}/messages`,
        );
        texts.push(...listed.body.messages.map((m) => m.content));
      }
      expect(texts).toContain("kept");
    } finally {
      expect(await daemon.stop()).toBe(0);
    }
  }

  it("refuses spar start during spar rekey, and starts after it", async () => {
    await startDuring(["rekey", "--yes"], "rekey", "re-encrypting");
    await dataReadable();
  }, 90_000);

  it("refuses spar start during spar restore, and starts after it", async () => {
    const snapshot = join(home, `backup-${Date.now()}.db`);
    const backup = await runCli(home, ["backup", snapshot], ENV);
    expect(backup.code, backup.stderr).toBe(0);
    await startDuring(["restore", snapshot, "--yes"], "restore", "restoring");
    await dataReadable();
  }, 90_000);

  it("takes over a lock left by a process that is gone", async () => {
    // A pid far above any this machine handed out (pid_max is at most 4,194,304).
    writeFileSync(join(home, "spar.pid"), "9999999 rekey\n", { mode: 0o600 });
    await dataReadable();
    figure(
      `data dir lock: spar start refused during rekey and restore ${refused}/2, the lock released after each, a stale lock taken over`,
    );
  }, 60_000);
});
