import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { unavailableNote } from "./index.js";
import { createServerConnection, type ServerConnection, type ServerFailed } from "./server.js";
import { type McpSettings, type StdioSpec, serverSpecs } from "./settings.js";

const FIXTURES = resolve(import.meta.dirname, "..", "..", "test", "fixtures", "mcp");

/** The daemon's environment as a server could see it: the basics, and secrets it must not get. */
const DAEMON_ENV = {
  PATH: process.env.PATH ?? "/usr/bin:/bin",
  HOME: "/home/spar-test",
  LANG: "C.UTF-8",
  OPENAI_API_KEY: "sk-provider-canary-1111",
  SPAR_MASTER_KEY: "master-key-canary-2222",
  SPAR_HOME: "/home/spar-test/.spar",
  GITHUB_TOKEN: "ghp_passed-on-purpose-3333",
};

interface Started {
  dir: string;
  connection: ServerConnection;
  failures: ServerFailed[];
  info: () => { pid: number; env: Record<string, string>; argv: string[] };
}

const open: Started[] = [];

afterEach(async () => {
  for (const { connection, dir } of open.splice(0)) {
    await connection.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

/** A connection to one server of `table` (a [mcp.servers.<name>] table), spoken to for real. */
function connect(name: string, table: McpSettings["servers"][string]): Started {
  const dir = mkdtempSync(join(tmpdir(), "spar-mcp-server-"));
  const [spec] = serverSpecs(
    { start_timeout_s: 20, servers: { [name]: table } },
    dir,
    "config.toml",
    DAEMON_ENV,
  );
  const failures: ServerFailed[] = [];
  const connection = createServerConnection({
    spec: spec as StdioSpec,
    startTimeoutMs: 20_000,
    callTimeoutMs: 20_000,
    clientVersion: "0.0.0-test",
    log: { info: () => undefined, warn: () => undefined, error: () => undefined },
    started: () => undefined,
    failed: (info) => failures.push(info),
  });
  const started = {
    dir,
    connection,
    failures,
    info: () => JSON.parse(readFileSync(join(dir, "info.json"), "utf8")),
  };
  open.push(started);
  return started;
}

const calendar = (extra: string[] = [], table: Partial<McpSettings["servers"][string]> = {}) => ({
  command: process.execPath,
  args: [join(FIXTURES, "calendar.mjs"), "--file", "events.json", "--info", "info.json", ...extra],
  ...table,
});
const signal = () => new AbortController().signal;

describe("an MCP server over stdio", () => {
  it("gets the daemon's basics and what pass_env names, never the daemon's other secrets", async () => {
    const { connection, info } = connect(
      "cal",
      calendar([], { pass_env: ["GITHUB_TOKEN"], env: { TZ: "UTC" } }),
    );
    await connection.ensureStarted();
    expect(connection.state).toBe("ready");
    expect(info().env).toEqual({
      PATH: DAEMON_ENV.PATH,
      HOME: "/home/spar-test",
      LANG: "C.UTF-8",
      TZ: "UTC",
      GITHUB_TOKEN: "ghp_passed-on-purpose-3333",
    });
    expect(JSON.stringify(info())).not.toMatch(/canary|SPAR_|OPENAI/);
  });

  it("offers its tools as mcp_<server>_<tool> with their input schemas, and runs them", async () => {
    const { connection, dir } = connect("cal", calendar());
    await connection.ensureStarted();
    expect(connection.moves.map((m) => m.name)).toEqual(["mcp_cal_create_event", "mcp_cal_list_events"]);
    const create = connection.moves[0];
    // Their effects as the server's annotations say: an addition (not destructive), a read.
    expect(create).toMatchObject({
      capability: "mcp",
      server: "cal",
      effects: "external",
      destructive: false,
    });
    expect(connection.moves[1]).toMatchObject({ effects: "read", destructive: false });
    expect(create?.input_schema).toMatchObject({
      type: "object",
      required: ["title", "start", "end"],
      properties: { title: { type: "string" } },
    });
    expect(create?.input_schema.$schema).toBeUndefined();
    const made = await connection.call(
      "mcp_cal_create_event",
      { title: "Standup", start: "2030-01-02T09:00:00Z", end: "2030-01-02T09:15:00Z" },
      signal(),
    );
    expect(made).toMatch(/^Created event [0-9a-f-]{36}: Standup/);
    const listed = await connection.call("mcp_cal_list_events", {}, signal());
    expect(listed).toContain("2030-01-02T09:00:00Z – 2030-01-02T09:15:00Z: Standup");
    const onDisk = JSON.parse(readFileSync(join(dir, "events.json"), "utf8"));
    expect(onDisk.events).toMatchObject([{ title: "Standup" }]);
    expect(connection.status()).toMatchObject({
      name: "cal",
      transport: "stdio",
      target: `stdio: ${process.execPath}`,
      state: "running",
      tools: ["mcp_cal_create_event", "mcp_cal_list_events"],
      starts: 1,
      pid: connection.pid,
    });
  });

  it("turns a tool's own error into a clear error for the model", async () => {
    const { connection } = connect("cal", calendar());
    const call = connection.call(
      "mcp_cal_create_event",
      { title: "Backwards", start: "2030-01-02T10:00:00Z", end: "2030-01-02T09:00:00Z" },
      signal(),
    );
    await expect(call).rejects.toMatchObject({
      code: "PROVIDER_ERROR",
      message: expect.stringContaining('create_event (MCP server "cal") reported an error'),
    });
    await expect(call).rejects.toThrow("must be after start");
  });

  it("restarts a server that dies, after a backoff, and says so to a call made meanwhile", async () => {
    const { connection, dir, failures, info } = connect("cal", calendar(["--fail-if", "broken"]));
    await connection.ensureStarted();
    const first = info().pid;
    writeFileSync(join(dir, "broken"), "");
    process.kill(first, "SIGKILL");
    await expect.poll(() => connection.state, { timeout: 10_000 }).toBe("down");
    expect(failures[0]).toMatchObject({
      server: "cal",
      error: "the server process was killed by SIGKILL",
      retry_in_s: 1,
    });
    // The restart fails while the fixture refuses to start; the wait doubles.
    await expect.poll(() => failures.length, { timeout: 10_000 }).toBeGreaterThanOrEqual(2);
    expect(failures[1]).toMatchObject({
      error:
        "the server process exited with code 3 before it answered: calendar: refusing to start while broken exists",
      retry_in_s: 2,
    });
    const refused = connection.call("mcp_cal_list_events", {}, signal());
    await expect(refused).rejects.toMatchObject({ code: "PROVIDER_ERROR" });
    // The model is told why and when, not what the server wrote on stderr.
    await expect(refused).rejects.toThrow(
      /^MCP server "cal" is not running \(the server process exited with code 3 before it answered\); Spar restarts it in \d+ s/,
    );
    expect(connection.status()).toMatchObject({
      state: "down",
      last_failure: {
        error: "the server process exited with code 3 before it answered",
        stderr: "calendar: refusing to start while broken exists",
      },
      retry_at: expect.any(String),
    });
    rmSync(join(dir, "broken"));
    await expect.poll(() => connection.state, { timeout: 15_000 }).toBe("ready");
    expect(info().pid).not.toBe(first);
    expect(await connection.call("mcp_cal_list_events", {}, signal())).toBe('No events.\n{"events":[]}');
    expect(connection.status()).toMatchObject({
      state: "running",
      starts: 3,
      last_failure: { stderr: expect.any(String) },
    });
  });

  it("fails clearly, and keeps trying, when its command does not exist", async () => {
    const { connection } = connect("nope", { command: "no-such-mcp-server-anywhere" });
    await connection.ensureStarted();
    expect(connection.state).toBe("down");
    expect(connection.moves).toEqual([]);
    expect(connection.status()).toMatchObject({
      state: "down",
      tools: [],
      starts: 1,
      last_failure: {
        error:
          'could not start: command "no-such-mcp-server-anywhere" was not found on the daemon\'s PATH; give its full path',
      },
    });
    const missingPath = connect("gone", { command: "./bin/missing-server" });
    await missingPath.connection.ensureStarted();
    expect(missingPath.connection.status().last_failure?.error).toBe(
      `could not start: command "./bin/missing-server" does not exist (${join(missingPath.dir, "bin", "missing-server")})`,
    );
  });

  it("does not start a server whose pass_env names a variable the daemon lacks", async () => {
    const { connection, dir } = connect(
      "cal",
      calendar([], { pass_env: ["GITHUB_TOKEN", "NOT_SET_ANYWHERE"] }),
    );
    await connection.ensureStarted();
    expect(connection.status()).toMatchObject({
      state: "down",
      last_failure: {
        error: expect.stringContaining(
          "[mcp.servers.cal] pass_env names NOT_SET_ANYWHERE, which the daemon's environment does not have",
        ),
      },
    });
    expect(existsSync(join(dir, "info.json"))).toBe(false);
  });

  it("stops the server process when closed", async () => {
    const { connection, info } = connect("cal", calendar());
    await connection.ensureStarted();
    const pid = info().pid;
    await connection.close();
    expect(connection.state).toBe("closed");
    expect(() => process.kill(pid, 0)).toThrow();
    await expect(connection.call("mcp_cal_list_events", {}, signal())).rejects.toThrow("is shut down");
  });
});

describe("what a fighter is told about servers that are down", () => {
  it("names each one, why, and whether its tools are offered", () => {
    expect(unavailableNote([])).toBe("");
    const note = unavailableNote([
      {
        name: "ok",
        transport: "stdio",
        target: "stdio: x",
        state: "running",
        tools: ["mcp_ok_a"],
        starts: 1,
      },
      {
        name: "mail",
        transport: "stdio",
        target: "stdio: y",
        state: "down",
        tools: [],
        starts: 1,
        last_failure: {
          error: "could not start: no such command",
          stderr: "private detail",
          at: "2030-01-01T00:00:00Z",
        },
        retry_at: "2030-01-01T00:00:01.000Z",
      },
    ]);
    expect(note).toBe(
      "\n\nTool servers that are down right now (tell the user if they need them):\n" +
        '- MCP server "mail" is unavailable: could not start: no such command. Its tools are not offered until it starts. Spar tries again at 2030-01-01T00:00:01.000Z.',
    );
  });
});
