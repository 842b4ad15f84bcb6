import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadCliKey } from "../../lib/keys.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  cleanEnv,
  freePort,
  removeHome,
  runCli,
  SPAR_BIN,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";
import { raw, signed } from "../helpers/http.js";

/** The provider key the daemon runs with: it must appear in no log line. */
const PROVIDER_KEY = "sk-logs-e2e-7f3a9c1d5e2b8f4a";

describe("spar logs: the daemon's JSON log, read back", () => {
  let fake: FakeOpenAI;
  let home: string;
  let daemon: TestDaemon;
  let other: { id: string; name: string };

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    const port = await freePort();
    writeConfig(home, port, fake.url);
    daemon = await startDaemon(home, port, { OPENAI_API_KEY: PROVIDER_KEY });
    fake.enqueue({ text: "Hello from spar." });
    const chat = await daemon.cli(["chat", "hi there"]);
    expect(chat.code, chat.stderr).toBe(0);
    const spawned = await daemon.cli(["fighter", "spawn", "oracle", "--name", "oracle-logs", "--json"]);
    expect(spawned.code, spawned.stderr).toBe(0);
    other = JSON.parse(spawned.stdout) as { id: string; name: string };
    fake.enqueue({ text: "Oracle speaks." });
    expect((await daemon.cli(["chat", "--fighter", "oracle-logs", "and you?"])).code).toBe(0);
    // A refused request: a warning.
    expect((await daemon.request("GET", "/api/v1/fighters/no-such-fighter")).status).toBe(404);
  });

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    if (home) removeHome(home);
  });

  const logFile = () => join(home, "logs", "spar.log");

  it("shows the start-up and the turns, pretty-printed", async () => {
    const result = await daemon.cli(["logs"]);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3} INFO {2}starting version=/);
    expect(result.stdout).toMatch(/INFO {2}listening url=http:\/\/127\.0\.0\.1:/);
    expect(result.stdout).toMatch(
      /INFO {2}request req_id=[0-9a-f-]{36} method=POST path=\/api\/v1\/fighters\/spar\/message status=200 .*plugin=arena-http/,
    );
    // Not a TTY: no colour codes.
    expect(result.stdout).not.toContain("\x1b[");
  });

  it("--json prints the entries as written, one JSON object a line", async () => {
    const result = await daemon.cli(["logs", "--json", "-n", "5"]);
    const lines = result.stdout.trim().split("\n");
    expect(lines).toHaveLength(5);
    const fileLines = readFileSync(logFile(), "utf8").trim().split("\n");
    expect(lines).toEqual(fileLines.slice(-5));
    for (const line of lines) {
      expect(JSON.parse(line)).toEqual(
        expect.objectContaining({
          time: expect.any(String),
          level: expect.any(String),
          msg: expect.any(String),
        }),
      );
    }
  });

  it("--level warn shows the refused request and none of the info lines", async () => {
    const result = await daemon.cli(["logs", "--level", "warn", "--json"]);
    const entries = result.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { level: string; path?: string; status?: number });
    expect(entries.length).toBeGreaterThan(0);
    expect(entries.every((e) => e.level === "warn" || e.level === "error")).toBe(true);
    expect(entries).toContainEqual(
      expect.objectContaining({ level: "warn", path: "/api/v1/fighters/no-such-fighter", status: 404 }),
    );
  });

  it("--fighter keeps the lines about one fighter, by name or by id", async () => {
    const byName = await daemon.cli(["logs", "--fighter", "oracle-logs", "--json"]);
    const paths = byName.stdout
      .trim()
      .split("\n")
      .map((l) => (JSON.parse(l) as { path?: string }).path);
    expect(paths.length).toBeGreaterThan(0);
    expect(paths.every((p) => p?.startsWith("/api/v1/fighters/oracle-logs"))).toBe(true);
    const spar = await daemon.cli(["logs", "--fighter", "spar"]);
    expect(spar.stdout).toContain("path=/api/v1/fighters/spar/message");
    expect(spar.stdout).not.toContain("oracle-logs");
    // A client addressing the fighter by id: its lines are found by the id.
    fake.enqueue({ text: "By id." });
    const byIdTurn = await daemon.request("POST", `/api/v1/fighters/${other.id}/message`, { message: "id?" });
    expect(byIdTurn.status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const byId = await daemon.cli(["logs", "--fighter", other.id]);
    expect(byId.stdout.trim().split("\n")).toEqual([
      expect.stringMatching(new RegExp(`request .*path=/api/v1/fighters/${other.id}/message status=200`)),
    ]);
  });

  it("--since keeps the lines from then on, and refuses a time it cannot read", async () => {
    const none = await daemon.cli(["logs", "--since", "2999-01-01T00:00:00Z"]);
    expect(none.code).toBe(0);
    expect(none.stdout).toBe("");
    const recent = await daemon.cli(["logs", "--since", "1h"]);
    expect(recent.stdout).toContain("starting");
    const bad = await daemon.cli(["logs", "--since", "last tuesday"]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--since must be an ISO time .* \(VALIDATION_FAILED\)/);
  });

  it("never writes the provider key or a request's signature", async () => {
    const cli = loadCliKey(home);
    if (!cli) throw new Error("no CLI key");
    const headers = signed(daemon.port, "GET", "/api/v1/fighters", { id: "cli", privateKey: cli });
    const response = await raw(daemon.port, "GET", "/api/v1/fighters", {
      ...headers,
      authorization: `Bearer ${PROVIDER_KEY}`,
    });
    expect(response.status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const text = readFileSync(logFile(), "utf8");
    expect(text).toContain('"key":"cli"');
    expect(text).not.toContain(PROVIDER_KEY);
    expect(text).not.toContain(headers.signature);
    expect(daemon.output()).not.toContain(PROVIDER_KEY);
  });

  it("-f follows the running daemon: a line written after it started is printed", async () => {
    const child: ChildProcess = spawn(process.execPath, [SPAR_BIN, "logs", "-f", "-n", "1"], {
      env: { ...cleanEnv(), SPAR_HOME: home },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout?.on("data", (d: Buffer) => {
      out += d.toString();
    });
    try {
      await waitFor(
        () => out.length > 0,
        () => out,
      );
      const probe = "/api/v1/fighters/follow-probe-4242";
      expect(out).not.toContain(probe);
      expect((await daemon.request("GET", probe)).status).toBe(404);
      await waitFor(
        () => out.includes(probe),
        () => out,
      );
      expect(out).toMatch(/WARN {2}request .*path=\/api\/v1\/fighters\/follow-probe-4242 status=404/);
    } finally {
      child.kill("SIGINT");
    }
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    expect(code).toBe(0);
  });
});

describe("a small [logs] max_size: the daemon rotates, keeps the count, and -f follows across", () => {
  let fake: FakeOpenAI;
  let home: string;
  let daemon: TestDaemon;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    const port = await freePort();
    writeConfig(home, port, fake.url, '\n[logs]\nmax_size = "2K"\nfiles = 2\n');
    daemon = await startDaemon(home, port);
  });

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    if (home) removeHome(home);
  });

  it("prints every request's line once, in order, while spar.log is rotated under it", async () => {
    const child = spawn(process.execPath, [SPAR_BIN, "logs", "-f", "--json", "-n", "1"], {
      env: { ...cleanEnv(), SPAR_HOME: home },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout?.on("data", (d: Buffer) => {
      out += d.toString();
    });
    const probes = Array.from({ length: 40 }, (_, i) => `/api/v1/fighters/rotation-probe-${i}`);
    try {
      // The last line printed: what follows is read from where that read ended.
      await waitFor(
        () => out.length > 0,
        () => out,
      );
      // Each request's line is ~300 bytes: 40 of them rotate a 2 KiB file several times.
      for (const probe of probes) {
        expect((await daemon.request("GET", probe)).status).toBe(404);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await waitFor(
        () => out.includes(`${probes.at(-1)}"`),
        () => out,
      );
    } finally {
      child.kill("SIGINT");
    }
    const seen = out
      .trim()
      .split("\n")
      .map((l) => (JSON.parse(l) as { path?: string }).path)
      .filter((p) => p?.includes("rotation-probe"));
    expect(seen).toEqual(probes);
    const files = readdirSync(join(home, "logs"))
      .filter((f) => f.startsWith("spar.log"))
      .sort();
    expect(files).toEqual(["spar.log", "spar.log.1", "spar.log.2"]);
  });
});

describe("spar start --detach and the log", () => {
  it("moves an older Spar's <home>/spar.log to logs/spar.out, and logs to logs/spar.log", async () => {
    const fake = await startFakeOpenAI();
    const home = tempHome();
    try {
      const port = await freePort();
      writeConfig(home, port, fake.url);
      writeFileSync(
        join(home, "spar.log"),
        "Spar 0.0.9 listening on http://127.0.0.1:1 (an older Spar's output)\n",
      );
      const started = await runCli(home, ["start", "--detach", "--json"], { OPENAI_API_KEY: PROVIDER_KEY });
      expect(started.code, started.stderr).toBe(0);
      expect(JSON.parse(started.stdout).log).toBe(join(home, "logs", "spar.log"));
      expect(existsSync(join(home, "spar.log"))).toBe(false);
      const out = readFileSync(join(home, "logs", "spar.out"), "utf8");
      expect(out).toMatch(/^Spar 0\.0\.9 listening .*\nSpar \S+ listening on http:\/\/127\.0\.0\.1:/);
      // The detached daemon's stderr gets no readable copy of its log.
      expect(out).not.toContain(" info ");
      const logged = await runCli(home, ["logs", "--json"]);
      expect(logged.stdout).toContain('"msg":"listening"');
    } finally {
      await runCli(home, ["stop"]);
      await fake.close();
      removeHome(home);
    }
  });
});

describe("spar logs before any daemon ran", () => {
  it("says there is no log yet, and where it will be", async () => {
    const home = tempHome();
    try {
      const result = await runCli(home, ["logs"]);
      expect(result.code).not.toBe(0);
      expect(result.stderr).toBe(
        `spar: no log at ${join(home, "logs", "spar.log")} yet: the daemon writes it once it starts (NOT_FOUND)\n`,
      );
    } finally {
      removeHome(home);
    }
  });
});

async function waitFor(condition: () => boolean, seen: () => string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`gave up waiting; output so far:\n${seen()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
