import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Capability, FighterMessageResult } from "../../sdk/index.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  allowUnasked,
  freePort,
  removeHome,
  runCli,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";

type ErrorBody = { error: { code: string; message: string } };
type Reply = FighterMessageResult & Partial<ErrorBody>;

interface ServerStatus {
  name: string;
  transport: "stdio" | "http";
  target: string;
  state: "not_started" | "starting" | "running" | "down" | "stopped";
  tools: string[];
  starts: number;
  pid?: number;
  last_failure?: { error: string; stderr?: string; at: string };
  retry_at?: string;
}

interface FixtureInfo {
  pid: number;
  env: Record<string, string>;
  argv: string[];
}

const FIXTURES = resolve(import.meta.dirname, "..", "fixtures", "mcp");

/** Secrets in the daemon's environment: no MCP server may get one, nor may anything the model saw. */
const SECRETS = {
  OPENAI_API_KEY: "sk-test-secret-0000",
  SPAR_MASTER_KEY: randomBytes(32).toString("hex"),
  ANTHROPIC_API_KEY: "sk-ant-canary-secret-4242",
  GITHUB_TOKEN: "ghp_canarycanarycanary",
};
/** What every stdio server gets from the daemon's environment (when set) without being named. */
const INHERITED = ["HOME", "LANG", "LC_ALL", "LOGNAME", "PATH", "SHELL", "TERM", "TMPDIR", "TZ", "USER"];
/** The token the HTTP calendar wants; it is in config.toml (a header), so Spar must not show it either. */
const HTTP_TOKEN = "webcal-token-5d1e0c";

function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

/** The calendar fixture serving streamable HTTP on 127.0.0.1, as any remote MCP server would. */
async function startHttpCalendar(file: string): Promise<{ url: string; process: ChildProcess }> {
  const child = spawn(process.execPath, [join(FIXTURES, "calendar.mjs"), "--http", "0", "--file", file], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", CALENDAR_HTTP_TOKEN: HTTP_TOKEN },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const url = await new Promise<string>((done, fail) => {
    let out = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const found = /listening on (\S+)/.exec(out)?.[1];
      if (found) done(found);
    });
    child.once("exit", (code) => fail(new Error(`the HTTP calendar exited with ${code}: ${out}`)));
  });
  return { url, process: child };
}

/**
 * The MCP servers of config.toml through the real daemon: a calendar and an outbox over stdio, the
 * calendar again over streamable HTTP, and a server whose command does not exist; an evil model
 * calling tools its fighter may not use.
 */
describe("moves-mcp: MCP servers from config.toml through a fighter's turn", () => {
  let fake: FakeOpenAI;
  let home: string;
  let daemon: TestDaemon;
  let data: string;
  let web: { url: string; process: ChildProcess };

  const send = (fighter: string, message: string) =>
    fetch(`${daemon.url}/api/v1/fighters/${fighter}/message`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ message }),
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as Reply }));
  const spawnFighter = async (name: string, capabilities: Capability[]) => {
    const created = await daemon.request("POST", "/api/v1/fighters", {
      manifest: { name, description: name, system_prompt: `You are ${name}.`, capabilities },
    });
    expect(created.status).toBe(201);
  };
  /** The model makes these tool calls in one reply; the results it got back for them. */
  const callTools = async (
    fighter: string,
    ...calls: [string, Record<string, unknown>][]
  ): Promise<string[]> => {
    fake.enqueue({ tool_calls: calls.map(([name, args]) => ({ name, arguments: args })) });
    const reply = await send(fighter, "use your tools");
    expect(reply.status).toBe(200);
    return (fake.calls().at(-1)?.tool_results ?? []).slice(-calls.length);
  };
  const offered = () => fake.calls()[0]?.tools ?? [];
  const failed = (content: string | undefined) => (JSON.parse(content ?? "null") as ErrorBody).error;
  const servers = async () => {
    const answer = await daemon.request<{ servers: ServerStatus[] }>("GET", "/api/v1/mcp/servers");
    expect(answer.status).toBe(200);
    return Object.fromEntries(answer.body.servers.map((s) => [s.name, s]));
  };
  const info = (name: string): FixtureInfo =>
    JSON.parse(readFileSync(join(data, `${name}-info.json`), "utf8"));
  const events = (): { title: string }[] =>
    JSON.parse(readFileSync(join(data, "calendar.json"), "utf8")).events;
  const everythingTheModelSaw = () => JSON.stringify(fake.requests.map((r) => r.body));

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    data = join(home, "mcp-data");
    mkdirSync(data);
    web = await startHttpCalendar(join(data, "web-calendar.json"));
    const port = await freePort();
    const toml = (value: string) => JSON.stringify(value);
    writeConfig(
      home,
      port,
      fake.url,
      [
        "",
        "[agent]",
        "tool_timeout_s = 20",
        "[creed]",
        "reflect = false",
        "[mcp]",
        "start_timeout_s = 20",
        "[mcp.servers.calendar]",
        `command = ${toml(process.execPath)}`,
        `args = ${JSON.stringify([
          join(FIXTURES, "calendar.mjs"),
          "--file",
          join(data, "calendar.json"),
          "--info",
          join(data, "calendar-info.json"),
          "--fail-if",
          join(data, "calendar-broken"),
        ])}`,
        "[mcp.servers.outbox]",
        `command = ${toml(process.execPath)}`,
        `args = ${JSON.stringify([join(FIXTURES, "outbox.mjs"), "--info", join(data, "outbox-info.json")])}`,
        `env = { OUTBOX_DIR = ${toml(join(data, "outbox"))}, OUTBOX_FROM = "assistant@example.test" }`,
        'pass_env = ["GITHUB_TOKEN"]',
        "[mcp.servers.broken]",
        'command = "no-such-mcp-server-anywhere"',
        "[mcp.servers.webcal]",
        `url = ${toml(web.url)}`,
        `headers = { Authorization = "Bearer ${HTTP_TOKEN}" }`,
        "",
      ].join("\n") +
        // send_email carries no annotations, so it is asked about by default; this suite tests MCP.
        allowUnasked(["mcp_outbox_send_email"], "assistant"),
    );
    daemon = await startDaemon(home, port, { ...SECRETS, DAEMON_ONLY_SETTING: "inherited-by-nobody" });
    await spawnFighter("planner", [{ type: "mcp", server: "calendar" }]);
    await spawnFighter("assistant", [
      { type: "mcp", server: "calendar" },
      { type: "mcp", server: "outbox" },
    ]);
    await spawnFighter("plain", [{ type: "memory" }]);
    await spawnFighter("fixer", [{ type: "mcp", server: "broken" }]);
    await spawnFighter("remote", [{ type: "mcp", server: "webcal" }]);
  });

  afterEach(() => fake.reset());

  afterAll(async () => {
    await daemon?.stop();
    web?.process.kill("SIGTERM");
    await fake?.close();
    removeHome(home);
  });

  it("starts no server before a fighter that may use it takes a turn, nor for one without a grant", async () => {
    const moves = await daemon.request<{ moves: { name: string }[] }>("GET", "/api/v1/moves");
    expect(moves.body.moves.filter((m) => m.name.startsWith("mcp_"))).toEqual([]);
    // No server has listed its tools yet, so the kernel knows no such move.
    const [result] = await callTools("plain", ["mcp_calendar_create_event", { title: "x" }]);
    expect(failed(result)).toEqual({
      code: "MOVE_NOT_FOUND",
      message: "no move named mcp_calendar_create_event",
    });
    expect(offered().filter((t) => t.startsWith("mcp_"))).toEqual([]);
    const status = await servers();
    expect(Object.keys(status).sort()).toEqual(["broken", "calendar", "outbox", "webcal"]);
    for (const s of Object.values(status))
      expect(s).toMatchObject({ state: "not_started", starts: 0, tools: [] });
    expect(existsSync(join(data, "calendar-info.json"))).toBe(false);
    expect(existsSync(join(data, "outbox-info.json"))).toBe(false);
  });

  it("offers a calendar-only fighter the calendar's tools with their schemas, and they work", async () => {
    const [created] = await callTools("planner", [
      "mcp_calendar_create_event",
      {
        title: "Dentist",
        start: "2030-03-04T10:00:00Z",
        end: "2030-03-04T11:00:00Z",
        notes: "bring the card",
      },
    ]);
    expect(created).toMatch(
      /^Created event [0-9a-f-]{36}: Dentist \(2030-03-04T10:00:00Z – 2030-03-04T11:00:00Z\)$/,
    );
    expect(offered()).toContain("mcp_calendar_create_event");
    expect(offered()).toContain("mcp_calendar_list_events");
    expect(offered().filter((t) => t.startsWith("mcp_outbox_") || t.startsWith("mcp_webcal_"))).toEqual([]);
    const tool = fake.requests[0]?.body?.tools?.find((t) => t.function.name === "mcp_calendar_create_event");
    expect(tool?.function.description).toBe("Add an event to the calendar.");
    expect(tool?.function.parameters).toMatchObject({
      type: "object",
      required: ["title", "start", "end"],
      properties: { title: { type: "string", minLength: 1, maxLength: 200 }, start: { format: "date-time" } },
    });
    expect(events()).toMatchObject([
      { title: "Dentist", start: "2030-03-04T10:00:00Z", notes: "bring the card" },
    ]);

    const [listed] = await callTools("planner", [
      "mcp_calendar_list_events",
      { from: "2030-03-01T00:00:00Z" },
    ]);
    expect(listed).toContain("2030-03-04T10:00:00Z – 2030-03-04T11:00:00Z: Dentist");
    expect(JSON.parse(listed?.split("\n").at(-1) ?? "null")).toMatchObject({
      events: [{ title: "Dentist" }],
    });

    // Only the calendar started: lazily, for the fighter that may use it, with none of the daemon's secrets.
    const status = await servers();
    expect(status.calendar).toMatchObject({
      state: "running",
      transport: "stdio",
      starts: 1,
      tools: ["mcp_calendar_create_event", "mcp_calendar_list_events"],
    });
    expect(status.calendar?.pid).toBe(info("calendar").pid);
    expect(status.outbox?.state).toBe("not_started");
    const env = info("calendar").env;
    expect(Object.keys(env).filter((k) => !INHERITED.includes(k))).toEqual([]);
    expect(env.PATH).toBe(process.env.PATH);
    for (const secret of Object.values(SECRETS)) expect(JSON.stringify(env)).not.toContain(secret);
  });

  it("checks a call's input against the tool's schema before the server sees it", async () => {
    const [bad] = await callTools("planner", ["mcp_calendar_create_event", { title: "", start: "soon" }]);
    expect(failed(bad).code).toBe("VALIDATION_FAILED");
    expect(failed(bad).message).toContain("mcp_calendar_create_event");
    expect(events()).toHaveLength(1);
  });

  it("lets a fighter with both grants send a mail and list it", async () => {
    const [sent] = await callTools("assistant", [
      "mcp_outbox_send_email",
      { to: "bob@example.test", subject: "Dentist on Monday", body: "See you at 10.\nBest" },
    ]);
    expect(sent).toMatch(
      /^Sent to bob@example\.test \(Message-ID <[0-9a-f-]{36}@spar-outbox\.localhost>, .+\.eml\)$/,
    );
    expect(offered()).toEqual(
      expect.arrayContaining([
        "mcp_calendar_create_event",
        "mcp_calendar_list_events",
        "mcp_outbox_list_sent",
        "mcp_outbox_send_email",
      ]),
    );
    const files = readdirSync(join(data, "outbox"));
    expect(files).toHaveLength(1);
    const eml = readFileSync(join(data, "outbox", files[0] as string), "utf8");
    expect(eml).toContain(
      "From: assistant@example.test\r\nTo: bob@example.test\r\nSubject: Dentist on Monday\r\n",
    );
    expect(eml.endsWith("\r\n\r\nSee you at 10.\r\nBest")).toBe(true);

    const [listed, calendar] = await callTools(
      "assistant",
      ["mcp_outbox_list_sent", {}],
      ["mcp_calendar_list_events", {}],
    );
    expect(JSON.parse(listed ?? "null")).toEqual([
      expect.objectContaining({ file: files[0], to: "bob@example.test", subject: "Dentist on Monday" }),
    ]);
    expect(calendar).toContain("Dentist");
    // The outbox gets its env table and the one secret its pass_env names, and nothing else.
    const { OUTBOX_DIR, OUTBOX_FROM, GITHUB_TOKEN, ...rest } = info("outbox").env;
    expect({ OUTBOX_DIR, OUTBOX_FROM, GITHUB_TOKEN }).toEqual({
      OUTBOX_DIR: join(data, "outbox"),
      OUTBOX_FROM: "assistant@example.test",
      GITHUB_TOKEN: SECRETS.GITHUB_TOKEN,
    });
    expect(Object.keys(rest).filter((k) => !INHERITED.includes(k))).toEqual([]);
    for (const secret of [SECRETS.OPENAI_API_KEY, SECRETS.SPAR_MASTER_KEY, SECRETS.ANTHROPIC_API_KEY])
      expect(JSON.stringify(rest)).not.toContain(secret);
  });

  it("refuses the outbox to the calendar-only fighter, and every MCP tool to a fighter without a grant", async () => {
    const [send, list] = await callTools(
      "planner",
      ["mcp_outbox_send_email", { to: "eve@example.test", subject: "exfil", body: "secrets" }],
      ["mcp_outbox_list_sent", {}],
    );
    expect(failed(send)).toEqual({
      code: "CAPABILITY_DENIED",
      message:
        'mcp_outbox_send_email needs the "mcp" capability for server "outbox", which this fighter does not hold',
    });
    expect(failed(list).code).toBe("CAPABILITY_DENIED");
    expect(offered().filter((t) => t.startsWith("mcp_outbox_"))).toEqual([]);
    expect(readdirSync(join(data, "outbox"))).toHaveLength(1);

    fake.reset();
    const [create, sendPlain] = await callTools(
      "plain",
      [
        "mcp_calendar_create_event",
        { title: "Planted", start: "2030-01-01T00:00:00Z", end: "2030-01-01T01:00:00Z" },
      ],
      ["mcp_outbox_send_email", { to: "eve@example.test", subject: "exfil", body: "x" }],
    );
    expect(failed(create)).toEqual({
      code: "CAPABILITY_DENIED",
      message:
        'mcp_calendar_create_event needs the "mcp" capability for server "calendar", which this fighter does not hold',
    });
    expect(failed(sendPlain).code).toBe("CAPABILITY_DENIED");
    expect(offered().filter((t) => t.startsWith("mcp_"))).toEqual([]);
    expect(events().map((e) => e.title)).toEqual(["Dentist"]);
    // Its turns started nothing: the servers nobody with a grant has used are still not started.
    const status = await servers();
    expect(status.webcal?.state).toBe("not_started");
    expect(status.broken?.state).toBe("not_started");
  });

  it("restarts a server killed mid-run, with backoff, and tells a call made while it is down", async () => {
    const first = info("calendar").pid;
    writeFileSync(join(data, "calendar-broken"), "");
    process.kill(first, "SIGKILL");
    // The restart fails while the fixture refuses to start, and the next try waits longer.
    await expect
      .poll(async () => (await servers()).calendar?.last_failure?.error, { timeout: 20_000 })
      .toBe("the server process exited with code 3 before it answered");
    const down = (await servers()).calendar;
    expect(down).toMatchObject({
      state: "down",
      last_failure: { stderr: `calendar: refusing to start while ${join(data, "calendar-broken")} exists` },
    });
    expect(down?.starts).toBeGreaterThanOrEqual(2);

    const [refused] = await callTools("planner", ["mcp_calendar_list_events", {}]);
    expect(failed(refused).code).toBe("PROVIDER_ERROR");
    expect(failed(refused).message).toMatch(
      /^MCP server "calendar" is not running \(the server process exited with code 3 before it answered\); Spar restarts it in \d+ s \(at .+\); try again after that$/,
    );
    expect(fake.calls()[0]?.context).toContain(
      '- MCP server "calendar" is unavailable: the server process exited',
    );

    rmSync(join(data, "calendar-broken"));
    await expect.poll(async () => (await servers()).calendar?.state, { timeout: 30_000 }).toBe("running");
    expect(alive(first)).toBe(false);
    const second = info("calendar").pid;
    expect(second).not.toBe(first);
    expect((await servers()).calendar?.pid).toBe(second);

    const [listed] = await callTools("planner", ["mcp_calendar_list_events", {}]);
    expect(listed).toContain("Dentist");
  });

  it("fails clearly for a server whose command does not exist, and the daemon keeps running", async () => {
    const [result] = await callTools("fixer", ["mcp_broken_anything", {}]);
    // It never listed tools, so there is no such move; the fighter is told why in its prompt.
    expect(failed(result)).toEqual({ code: "MOVE_NOT_FOUND", message: "no move named mcp_broken_anything" });
    expect(offered().filter((t) => t.startsWith("mcp_"))).toEqual([]);
    expect(fake.calls()[0]?.context).toContain(
      '- MCP server "broken" is unavailable: could not start: command "no-such-mcp-server-anywhere" was not found on the daemon\'s PATH; give its full path. Its tools are not offered until it starts.',
    );
    expect((await servers()).broken).toMatchObject({
      state: "down",
      tools: [],
      last_failure: {
        error:
          'could not start: command "no-such-mcp-server-anywhere" was not found on the daemon\'s PATH; give its full path',
      },
    });
    const status = await daemon.request<{ status: string }>("GET", "/api/v1/status");
    expect(status.body.status).toBe("ok");
    expect(daemon.process.exitCode).toBeNull();
  });

  it("speaks streamable HTTP to a server given by url, with its headers", async () => {
    const [created, listed] = await callTools(
      "remote",
      [
        "mcp_webcal_create_event",
        { title: "Remote sync", start: "2030-05-01T08:00:00Z", end: "2030-05-01T08:30:00Z" },
      ],
      ["mcp_webcal_list_events", {}],
    );
    expect(created).toMatch(/^Created event [0-9a-f-]{36}: Remote sync/);
    expect(listed).toContain("Remote sync");
    expect(offered().filter((t) => t.startsWith("mcp_"))).toEqual([
      "mcp_webcal_create_event",
      "mcp_webcal_list_events",
    ]);
    const file = JSON.parse(readFileSync(join(data, "web-calendar.json"), "utf8"));
    expect(file.events).toMatchObject([{ title: "Remote sync" }]);
    expect((await servers()).webcal).toMatchObject({
      state: "running",
      transport: "http",
      target: `http: ${web.url}`,
    });
  });

  it("reports every server in spar doctor: started or not, its tools, its last failure", async () => {
    const text = await daemon.cli(["doctor"]);
    expect(text.code).toBe(1);
    const lines = text.stdout.split("\n");
    const at = lines.indexOf("MCP servers:");
    expect(at).toBeGreaterThan(0);
    const mcp = lines.slice(at + 1, at + 5);
    expect(mcp[0]).toMatch(
      /^ {2}FAIL broken: stdio: no-such-mcp-server-anywhere; down, next try at \S+; last failure at \S+: could not start: command "no-such-mcp-server-anywhere" was not found on the daemon's PATH; give its full path; no tools known$/,
    );
    expect(mcp[1]).toMatch(
      new RegExp(
        `^ {2}ok {3}calendar: stdio: ${process.execPath}; running \\(pid \\d+\\), started \\d+ times; 2 tool\\(s\\): mcp_calendar_create_event, mcp_calendar_list_events; last failure at \\S+: the server process exited with code 3 before it answered \\(stderr: calendar: refusing to start while .+ exists\\)$`,
      ),
    );
    expect(mcp[2]).toMatch(
      /^ {2}ok {3}outbox: stdio: .+; running \(pid \d+\); 2 tool\(s\): mcp_outbox_list_sent, mcp_outbox_send_email$/,
    );
    expect(mcp[3]).toBe(
      `  ok   webcal: http: ${web.url}; running; 2 tool(s): mcp_webcal_create_event, mcp_webcal_list_events`,
    );

    const json = await daemon.cli(["doctor", "--json"]);
    const report = JSON.parse(json.stdout) as { ok: boolean; mcp: { server: string; ok: boolean }[] };
    expect(report.ok).toBe(false);
    expect(report.mcp.map((m) => [m.server, m.ok])).toEqual([
      ["broken", false],
      ["calendar", true],
      ["outbox", true],
      ["webcal", true],
    ]);
    for (const secret of [...Object.values(SECRETS), HTTP_TOKEN]) {
      expect(text.stdout + text.stderr + json.stdout).not.toContain(secret);
      expect(everythingTheModelSaw()).not.toContain(secret);
    }
  });

  it("stops every server with the daemon; doctor then lists them as configured", async () => {
    const pids = [info("calendar").pid, info("outbox").pid];
    expect(pids.every(alive)).toBe(true);
    expect(await daemon.stop()).toBe(0);
    expect(pids.some(alive)).toBe(false);
    const stopped = await runCli(home, ["doctor"], SECRETS);
    expect(stopped.stdout).toContain(
      "  ok   calendar: stdio: " +
        `${process.execPath}; not started (Spar is not running; it starts on the first turn of a fighter that may use it)`,
    );
    expect(stopped.stdout).toContain(`  ok   webcal: http: ${web.url}; not started`);
    expect(stopped.stdout).not.toContain(HTTP_TOKEN);
  });
});
