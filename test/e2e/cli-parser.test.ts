import { spawn } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FighterRecord } from "../../sdk/types.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import { freePort, removeHome, runCli, SPAR_BIN, tempHome, writeConfig } from "../helpers/daemon.js";

const KINDS = readdirSync(join(import.meta.dirname, "..", "..", "fighters"))
  .filter((f) => f.endsWith(".json") && f !== "spar.json")
  .map((f) => f.slice(0, -".json".length))
  .sort();

/** The command line's own errors: one line, a stable code, the valid choices; JSON with --json. */
describe("spar's command line", () => {
  let home: string;
  beforeAll(() => {
    home = tempHome();
  });
  afterAll(() => removeHome(home));

  const refusals: [string[], string][] = [
    [
      ["move", "serch", "web"],
      'unknown action "serch" for move; actions: list, search, install, scan, info, verify, update, remove, doctor',
    ],
    [["security"], "security needs an action; actions: audit"],
    [["key", "add", "laptop"], "key add needs <public-key>; usage: spar key add <name> <public-key>"],
    [["move", "list", "web"], 'unexpected argument "web" for move list; usage: spar move list'],
    [
      ["chat", "hello", "world"],
      'unexpected argument "world" for chat; usage: spar chat [text] (quote an argument that has spaces)',
    ],
    [["fighter", "spawn", "coder", "--name", ""], "--name needs a value, not an empty string: --name <name>"],
    [
      ["chat", "hi", "--fighter"],
      "--fighter needs a value: --fighter <name|id> (write --fighter=<value> for one starting with -)",
    ],
    [["key", "list", "--force"], "unknown option --force for key list; options: --json, --help"],
    [["status", "--json=yes"], "--json takes no value"],
  ];

  it.each(refusals)("refuses %j with one line and VALIDATION_FAILED", async (args, message) => {
    const result = await runCli(home, args);
    expect(result).toEqual({ code: 1, stdout: "", stderr: `spar: ${message} (VALIDATION_FAILED)\n` });
  });

  it("prints the same errors as JSON on stdout with --json", async () => {
    const result = await runCli(home, ["move", "serch", "web", "--json"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe("");
    expect(JSON.parse(result.stdout)).toEqual({
      error: {
        code: "VALIDATION_FAILED",
        message:
          'unknown action "serch" for move; actions: list, search, install, scan, info, verify, update, remove, doctor',
      },
    });
    const unknown = await runCli(home, ["--json", "wrestle"]);
    expect(JSON.parse(unknown.stdout).error.message).toMatch(/^unknown command "wrestle"; commands: init, /);
    // A daemon that is not running, through a command's own error path.
    const stopped = await runCli(home, ["stop", "--json"]);
    expect(stopped.code).toBe(1);
    expect(JSON.parse(stopped.stdout)).toMatchObject({ error: { code: "DAEMON_UNREACHABLE" } });
  });

  it("lists a noun's actions, their arguments, options and the fighter kinds in --help", async () => {
    const key = await runCli(home, ["key", "--help"]);
    expect(key.code).toBe(0);
    expect(key.stdout).toMatch(/^Usage: spar key <action> \[options\]/);
    expect(key.stdout).toMatch(
      /\n {2}add <name> <public-key> +Authorize a public key: .*- to read it from stdin\n/,
    );
    expect(key.stdout).toMatch(/\n {2}list +The authorized keys/);
    expect(key.stdout).toMatch(/\n {2}remove <name> +Stop accepting a key\n {4}--force +/);

    const fighter = await runCli(home, ["fighter", "spawn", "--help"]);
    expect(fighter.stdout).toMatch(/\n {2}spawn <kind> +Spawn a fighter of a bundled kind\n +kinds: (.*)\n/);
    expect(/kinds: (.*)\n/.exec(fighter.stdout)?.[1]).toBe(KINDS.join(", "));
    expect(fighter.stdout).toContain("--name <name>");

    const all = await runCli(home, ["--help"]);
    for (const noun of ["bout", "fighter", "key", "plugin", "move", "security"]) {
      expect(all.stdout).toMatch(new RegExp(`\\n {2}${noun} <action> +.*: `));
    }
    expect(all.stdout).toContain("sign <method> <path> [body]");
    const json = JSON.parse((await runCli(home, ["--help", "--json"])).stdout) as {
      commands: { name: string; actions?: { name: string; kinds?: string[] }[] }[];
    };
    const spawn = json.commands.find((c) => c.name === "fighter")?.actions?.find((a) => a.name === "spawn");
    expect(spawn?.kinds).toEqual(KINDS);
  });

  it("checks every numeric option before the command runs: a whole number in its range (issue 28 item 13)", async () => {
    // No daemon runs for this data dir: each refusal comes from the command line, before any request.
    const cases: [string[], string][] = [
      [["gorilla", "runs", "alpha", "--limit", "0"], '--limit must be a whole number from 1 to 500, not "0"'],
      [
        ["gorilla", "runs", "alpha", "--limit", "abc"],
        '--limit must be a whole number from 1 to 500, not "abc"',
      ],
      [
        ["troop", "tasks", "crew", "--limit", "501"],
        '--limit must be a whole number from 1 to 500, not "501"',
      ],
      [["troop", "tasks", "crew", "--limit=-2"], '--limit must be a whole number from 1 to 500, not "-2"'],
      [
        ["move", "search", "web", "--limit", "1e2"],
        '--limit must be a whole number from 1 to 100, not "1e2"',
      ],
      [
        ["move", "search", "web", "--limit", "2.5"],
        '--limit must be a whole number from 1 to 100, not "2.5"',
      ],
    ];
    for (const [args, message] of cases) {
      const result = await runCli(home, args);
      expect(result, args.join(" ")).toEqual({
        code: 1,
        stdout: "",
        stderr: `spar: ${message} (VALIDATION_FAILED)\n`,
      });
    }
    // In range, the command goes on to the daemon (which is not running).
    const nowhere = { SPAR_API_LISTEN: `127.0.0.1:${await freePort()}` };
    const ok = await runCli(home, ["gorilla", "runs", "alpha", "--limit", "500", "--json"], nowhere);
    expect(JSON.parse(ok.stdout)).toMatchObject({ error: { code: "DAEMON_UNREACHABLE" } });
  });

  it("exits quietly when the reader of its output goes away (issue 28 item 8)", async () => {
    for (const args of [["--help"], ["plugin", "list", "--json"], ["plugin", "list"]]) {
      const child = spawn(process.execPath, [SPAR_BIN, ...args], {
        env: { PATH: process.env.PATH, SPAR_HOME: home },
        stdio: ["ignore", "pipe", "pipe"],
      });
      // The reader closes before the CLI writes a byte (`spar … | head -0`): every write meets EPIPE.
      child.stdout.destroy();
      let stderr = "";
      child.stderr.on("data", (d: Buffer) => {
        stderr += d.toString();
      });
      const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((done) =>
        child.once("close", (c, s) => done([c, s])),
      );
      expect({ args, code, signal, stderr }).toEqual({ args, code: 0, signal: null, stderr: "" });
    }
  });

  it("lists a noun's actions once in help, and plugin list says which plugins are active and why not (issue 28 item 26)", async () => {
    const help = await runCli(home, ["move", "--help"]);
    const [head = "", actions = ""] = help.stdout.split("\nActions:\n");
    // Named once each, in the Actions table; the lines above it name none of them.
    for (const action of [
      "list",
      "search",
      "install",
      "scan",
      "info",
      "verify",
      "update",
      "remove",
      "doctor",
    ]) {
      expect(actions.match(new RegExp(`^ {2}${action}\\b`, "gm")), action).toHaveLength(1);
      expect(head, action).not.toMatch(new RegExp(`\\b${action}\\b`));
    }
    const all = await runCli(home, ["--help"]);
    expect(all.stdout).toMatch(
      /\n {2}move <action> +Tools \(moves\) and skills: list, search, install, scan, info, verify, update, remove, doctor\n/,
    );
    const described = JSON.parse((await runCli(home, ["--help", "--json"])).stdout) as {
      commands: { name: string; summary: string; actions?: { name: string }[] }[];
    };
    for (const command of described.commands.filter((c) => c.actions)) {
      // The overview adds the actions to the summary: a summary that lists them shows them twice.
      const names = (command.actions ?? []).map((a) => a.name).join(", ");
      expect(command.summary, command.name).not.toContain(names);
    }

    const other = tempHome();
    try {
      writeFileSync(
        join(other, "config.toml"),
        '[plugins]\ndisable = ["moves-shell"]\nstore = "store-postgres"\n',
      );
      const listed = await runCli(other, ["plugin", "list", "--json"]);
      expect(listed.code).toBe(0);
      const plugins = (
        JSON.parse(listed.stdout) as { plugins: { id: string; active: boolean; reason: string | null }[] }
      ).plugins;
      const state = (id: string) => plugins.find((p) => p.id === id);
      expect(state("moves-shell")).toMatchObject({
        active: false,
        reason: "disabled: [plugins] disable lists it",
      });
      expect(state("store-sqlite")).toMatchObject({
        active: false,
        reason: 'not in the store slot: [plugins] store = "store-postgres"',
      });
      expect(state("store-postgres")).toMatchObject({ active: true, reason: null });
      expect(state("moves-files")).toMatchObject({ active: true, reason: null });
      expect(state("bus-redis")).toMatchObject({
        active: false,
        reason: 'not in the bus slot: [plugins] bus = "bus-local"',
      });

      writeFileSync(join(other, "config.toml"), '[plugins]\nenable = ["moves-files"]\n');
      const table = await runCli(other, ["plugin", "list"]);
      const line = (id: string) => table.stdout.split("\n").find((l) => l.startsWith(`${id} `)) ?? "";
      expect(table.stdout.split("\n")[0]).toMatch(/^ID +KIND +STATE +VERSION +SOURCE +DESCRIPTION$/);
      expect(line("moves-files")).toMatch(/^moves-files +moves +active +/);
      expect(line("moves-shell")).toMatch(
        /^moves-shell +moves +inactive \(not enabled: \[plugins\] enable does not list it\) +/,
      );
      // A slot's plugin is not held back by enable: the store still runs.
      expect(line("store-sqlite")).toMatch(/^store-sqlite +store +active +/);
      expect(table.stdout).toMatch(/\n\d+ active, \d+ inactive; \[plugins\] in config\.toml chooses/);
    } finally {
      removeHome(other);
    }
  });

  it("prints its version, also as JSON", async () => {
    const { version } = JSON.parse(
      readFileSync(join(import.meta.dirname, "..", "..", "package.json"), "utf8"),
    );
    expect((await runCli(home, ["--version"])).stdout).toMatch(new RegExp(`^spar ${version} \\(Node\\.js v`));
    expect(JSON.parse((await runCli(home, ["-v", "--json"])).stdout)).toMatchObject({ version });
  });
});

describe("--json for init, start --detach and stop", () => {
  let fake: FakeOpenAI;
  let home: string;
  let port: number;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    port = await freePort();
  });
  afterAll(async () => {
    await runCli(home, ["stop"]);
    await fake?.close();
    removeHome(home);
  });

  it("reports the default model the config names, not the one the environment suggests", async () => {
    writeConfig(home, port, fake.url);
    const result = await runCli(home, ["init", "--json"]);
    expect(JSON.parse(result.stdout).default_model).toMatchObject({
      provider: "openai",
      model: "fake-model",
    });
    expect((await runCli(home, ["init"])).stdout).toBe(
      `Spar is already set up in ${home} (default model: openai / fake-model)\n`,
    );
  });

  it("starts in the background and stops with JSON answers, and keeps option values as written", async () => {
    const env = { OPENAI_API_KEY: "sk-test-secret-0000" };
    const started = await runCli(home, ["start", "--detach", "--json"], env);
    expect(started.code).toBe(0);
    const body = JSON.parse(started.stdout) as { started: boolean; pid: number; url: string; log: string };
    expect(body).toEqual({
      started: true,
      pid: expect.any(Number),
      url: `http://127.0.0.1:${port}`,
      log: join(home, "logs", "spar.log"),
    });

    const twice = await runCli(home, ["start", "--detach", "--json"], env);
    expect(JSON.parse(twice.stdout)).toEqual({
      error: { code: "CONFLICT", message: `Spar is already running (pid ${body.pid})` },
    });

    // "007" stays "007" (a number-like value is not turned into 7).
    const spawned = await runCli(home, ["fighter", "spawn", "oracle", "--name", "007", "--json"], env);
    expect((JSON.parse(spawned.stdout) as FighterRecord).name).toBe("007");

    const stopped = await runCli(home, ["stop", "--json"]);
    expect(JSON.parse(stopped.stdout)).toEqual({ stopped: true, pid: body.pid });
  });

  it("prints the foreground daemon's start as one JSON line", async () => {
    writeFileSync(join(home, ".env"), "OPENAI_API_KEY=sk-test-secret-0000\n", { mode: 0o600 });
    const child = spawn(process.execPath, [SPAR_BIN, "start", "--json"], {
      env: { PATH: process.env.PATH, SPAR_HOME: home },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const first = await new Promise<string>((done) => {
      let out = "";
      child.stdout.on("data", (d: Buffer) => {
        out += d.toString();
        if (out.includes("\n")) done(out.slice(0, out.indexOf("\n")));
      });
      child.once("exit", () => done(out));
    });
    const exited = new Promise((done) => child.once("exit", done));
    child.kill("SIGTERM");
    await exited;
    expect(JSON.parse(first)).toMatchObject({ listening: `http://127.0.0.1:${port}`, pid: child.pid, home });
  });
});
