import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, realpathSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
/** What shell_exec returns: the sandbox's own result type. */
import type { CommandResult as ShellResult } from "../../lib/sandbox/index.js";
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
import { processesWith } from "../helpers/processes.js";

type ErrorBody = { error: { code: string; message: string } };
type Reply = FighterMessageResult & Partial<ErrorBody>;

/** Secrets in the daemon's environment: none may reach a tool result, nor anything the model got. */
const SECRETS = {
  OPENAI_API_KEY: "sk-test-secret-0000",
  SPAR_MASTER_KEY: randomBytes(32).toString("hex"),
  ANTHROPIC_API_KEY: "sk-ant-canary-secret-4242",
  GITHUB_TOKEN: "ghp_canarycanarycanary",
};

/** An evil model against the real daemon: shell_exec, a capability grant, and nothing trusted. */
describe("moves-shell: shell_exec through the real daemon", () => {
  let fake: FakeOpenAI;
  let home: string;
  let daemon: TestDaemon;
  let workspace: string;

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
  /** The model calls shell_exec once per argument set, in one reply; the results it got back. */
  const shell = async (fighter: string, ...calls: Record<string, unknown>[]): Promise<string[]> => {
    fake.enqueue({ tool_calls: calls.map((args) => ({ name: "shell_exec", arguments: args })) });
    const reply = await send(fighter, "run it");
    expect(reply.status).toBe(200);
    // The prompt carries the bout's earlier results too: this call's are the last ones.
    return (fake.calls().at(-1)?.tool_results ?? []).slice(-calls.length);
  };
  const ok = (content: string | undefined): ShellResult => {
    const parsed = JSON.parse(content ?? "null") as ShellResult & Partial<ErrorBody>;
    expect(parsed.error).toBeUndefined();
    return parsed;
  };
  const failed = (content: string | undefined) => (JSON.parse(content ?? "null") as ErrorBody).error;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    const port = await freePort();
    writeConfig(
      home,
      port,
      fake.url,
      "\n[agent]\ntool_timeout_s = 8\n[creed]\nreflect = false\n[moves.shell]\ntimeout_s = 20\nmax_output_bytes = 4096\n" +
        // This suite tests shell_exec, not approvals: it runs unasked, as a rule in config.toml lets it.
        allowUnasked(["shell_exec"]),
    );
    daemon = await startDaemon(home, port, { ...SECRETS, DAEMON_ONLY_SETTING: "inherited-by-nobody" });
    await spawnFighter("shelly", [
      {
        type: "shell_exec",
        pattern: ["env", "printenv", "printenv *", "cat *", "echo *", "pwd", "seq *", "sleep *", "sh -c *"],
      },
      { type: "shell_exec", pattern: "/bin/sh -c *" },
    ]);
    await spawnFighter("narrow", [{ type: "shell_exec", pattern: ["echo *", "ls"] }]);
    await spawnFighter("plain", [{ type: "memory" }]);
    workspace = join(realpathSync(home), "workspaces", "shelly");
  });

  afterEach(() => fake.reset());

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    removeHome(home);
  });

  it("gives commands none of the daemon's environment: env, printenv, /proc/self/environ, $VARS", async () => {
    const results = await shell(
      "shelly",
      { argv: ["env"] },
      { argv: ["printenv"] },
      { argv: ["cat", "/proc/self/environ"] },
      { argv: ["sh", "-c", 'echo "[$OPENAI_API_KEY][$SPAR_MASTER_KEY][$ANTHROPIC_API_KEY][$SPAR_HOME]"'] },
      { argv: ["printenv", "OPENAI_API_KEY"] },
    );
    expect(results).toHaveLength(5);
    // bubblewrap sets PWD to the folder it starts the program in.
    const expected = [
      "HOME=/home/fighter",
      "LANG=C.UTF-8",
      "PATH=/usr/local/bin:/usr/bin:/bin",
      `PWD=${workspace}`,
      "TMPDIR=/tmp",
    ];
    expect(ok(results[0]).stdout.trim().split("\n").sort()).toEqual(expected);
    expect(ok(results[1]).stdout.trim().split("\n").sort()).toEqual(expected);
    expect(ok(results[2]).stdout.split("\0").filter(Boolean).sort()).toEqual(expected);
    expect(ok(results[3]).stdout).toBe("[][][][]\n");
    expect(ok(results[4])).toMatchObject({ exit_code: 1, stdout: "" });
    for (const result of results)
      expect(result).not.toMatch(/SPAR_MASTER|OPENAI|ANTHROPIC|GITHUB|DAEMON_ONLY/);
    const everything = JSON.stringify(fake.requests.map((r) => r.body));
    for (const secret of Object.values(SECRETS)) expect(everything).not.toContain(secret);
  });

  it("cannot see the daemon's process or its environment: the sandbox has a PID namespace of its own", async () => {
    const [parent, daemonEnv, every] = await shell(
      "shelly",
      { argv: ["sh", "-c", "tr '\\0' '\\n' < /proc/$PPID/environ"] },
      { argv: ["sh", "-c", `base64 /proc/${daemon.process.pid}/environ`] },
      { argv: ["sh", "-c", "cat /proc/[0-9]*/environ | base64; ls /proc | grep -c '^[0-9]'"] },
    );
    // The program's parent is the sandbox's init, started with nothing but the folder it is in.
    expect(ok(parent)).toMatchObject({ exit_code: 0, stdout: "PWD=/\n" });
    expect(ok(daemonEnv).exit_code).not.toBe(0);
    // Only the sandbox's own few processes are there.
    expect(Number(ok(every).stdout.trim().split("\n").at(-1))).toBeLessThan(8);
    const everything = JSON.stringify([...fake.requests.map((r) => r.body), parent, daemonEnv, every]);
    for (const secret of Object.values(SECRETS)) {
      expect(everything).not.toContain(secret);
      expect(everything).not.toContain(Buffer.from(secret).toString("base64").slice(0, 12));
    }
  });

  it("passes metacharacters as plain text: nothing is parsed, nothing is created", async () => {
    const args = [
      "a; touch pwned1",
      "$(touch pwned2)",
      "`touch pwned3`",
      "&& touch pwned4",
      "| tee pwned5",
      "x\ntouch pwned6",
      "*",
    ];
    const [result] = await shell("shelly", { argv: ["echo", ...args] });
    expect(ok(result)).toMatchObject({ exit_code: 0, stdout: `${args.join(" ")}\n`, stderr: "" });
    expect(readdirSync(workspace).filter((f) => f.startsWith("pwned"))).toEqual([]);
  });

  it("runs in the fighter's workspace, or a folder inside it, and never outside", async () => {
    const [made] = await shell("shelly", { command: "mkdir -p sub/deeper && echo made" });
    expect(ok(made).stdout).toBe("made\n");
    const [here, sub, out, missing] = await shell(
      "shelly",
      { argv: ["pwd"] },
      { argv: ["pwd"], cwd: "sub/deeper" },
      { argv: ["pwd"], cwd: "../" },
      { argv: ["pwd"], cwd: "nowhere" },
    );
    expect(ok(here).stdout).toBe(`${workspace}\n`);
    expect(ok(sub).stdout).toBe(`${join(workspace, "sub", "deeper")}\n`);
    expect(failed(out)).toMatchObject({
      code: "FORBIDDEN",
      message: 'cwd "../" is outside your workspace: give a folder inside it',
    });
    expect(failed(missing)).toMatchObject({ code: "NOT_FOUND" });
  });

  it("runs a command line through /bin/sh only where a pattern allows /bin/sh -c", async () => {
    const [line] = await shell("shelly", { command: 'echo one | tr a-z A-Z; echo "$HOME"; exit 4' });
    expect(ok(line)).toMatchObject({ exit_code: 4, stdout: "ONE\n/home/fighter\n" });
    const [refused] = await shell("narrow", { command: "echo hi; ls" });
    expect(failed(refused)).toEqual({
      code: "CAPABILITY_DENIED",
      message:
        'shell_exec may not run the shell command "echo hi; ls" (run as /bin/sh -c <command>): it matches none of this fighter\'s shell_exec patterns: "echo *", "ls"; a command line needs a pattern that allows /bin/sh -c, such as "/bin/sh -c *"',
    });
  });

  it("refuses a command no pattern allows, naming the patterns, and runs the ones that match", async () => {
    const [rm, ls, lsArgs, echo] = await shell(
      "narrow",
      { argv: ["rm", "-rf", workspace] },
      { argv: ["ls"] },
      { argv: ["ls", "-la", "/"] },
      { argv: ["echo", "allowed; rm -rf /"] },
    );
    expect(failed(rm)).toEqual({
      code: "CAPABILITY_DENIED",
      message: `shell_exec may not run ${JSON.stringify(["rm", "-rf", workspace])}: it matches none of this fighter's shell_exec patterns: "echo *", "ls"`,
    });
    expect(ok(ls).exit_code).toBe(0);
    expect(failed(lsArgs).code).toBe("CAPABILITY_DENIED");
    expect(ok(echo).stdout).toBe("allowed; rm -rf /\n");
    expect(existsSync(workspace)).toBe(true);
  });

  it("lets a full_access fighter run anything, command lines included", async () => {
    const [line] = await shell("spar", { command: "echo $((6 * 7))" });
    expect(ok(line).stdout).toBe("42\n");
  });

  it("refuses malformed calls with a stable code, and names a program that does not exist", async () => {
    const [both, neither, empty, nul, missing, unknown] = await shell(
      "shelly",
      { argv: ["echo", "x"], command: "echo x" },
      {},
      { argv: [""] },
      { argv: ["echo", "a\u0000b"] },
      { argv: ["no-such-program-anywhere"] },
      { argv: ["echo"], shell: true },
    );
    const exactlyOne =
      "shell_exec needs exactly one of argv (the program and its arguments) and command (a line for /bin/sh -c)";
    expect(failed(both)).toEqual({ code: "VALIDATION_FAILED", message: exactlyOne });
    expect(failed(neither)).toEqual({ code: "VALIDATION_FAILED", message: exactlyOne });
    expect(failed(empty)).toEqual({ code: "VALIDATION_FAILED", message: "argv[0], the program, is empty" });
    expect(failed(nul)).toEqual({
      code: "VALIDATION_FAILED",
      message: "arguments cannot contain the NUL character",
    });
    expect(failed(missing)).toEqual({
      code: "CAPABILITY_DENIED",
      message: expect.stringContaining('shell_exec may not run ["no-such-program-anywhere"]'),
    });
    expect(failed(unknown).code).toBe("VALIDATION_FAILED");
    const [notFound] = await shell("spar", { argv: ["no-such-program-anywhere"] });
    expect(failed(notFound)).toEqual({
      code: "NOT_FOUND",
      message:
        'no program named "no-such-program-anywhere" in any folder of PATH (/usr/local/bin:/usr/bin:/bin)',
    });
  });

  it("refuses shell_exec to a fighter without the grant, which is not even offered it", async () => {
    const [result] = await shell("plain", { argv: ["echo", "hi"] });
    expect(fake.calls()[0]?.tools).not.toContain("shell_exec");
    expect(failed(result)).toEqual({
      code: "CAPABILITY_DENIED",
      message: 'shell_exec needs the "shell_exec" capability, which this fighter does not hold',
    });
    expect(existsSync(join(home, "workspaces", "plain", ".tmp"))).toBe(false);
  });

  it("stops a command at its timeout, and caps its output at [moves.shell] max_output_bytes", async () => {
    const [slow, loud] = await shell(
      "shelly",
      { argv: ["sleep", "30"], timeout_s: 1 },
      { argv: ["seq", "1", "100000000"] },
    );
    expect(ok(slow)).toMatchObject({ exit_code: null, signal: "SIGTERM", timed_out: true });
    const cut = ok(loud);
    // Past the cap the command is stopped: the model gets nothing more from it.
    expect(cut).toMatchObject({ exit_code: null, signal: "SIGKILL", truncated: true, timed_out: false });
    expect(cut.stdout.startsWith("1\n2\n3\n")).toBe(true);
    expect(cut.stdout).toMatch(
      /\[cut: \d+ more bytes of stdout not shown \(the limit is 4096 bytes of output per command\); the command was stopped there/,
    );
  });

  it("kills the command and its grandchild when the turn is cancelled", async () => {
    fake.enqueue({
      tool_calls: [
        {
          name: "shell_exec",
          arguments: { command: "sleep 3011 & setsid sleep 3012 & sleep 3013" },
        },
      ],
    });
    const pending = send("shelly", "start something long");
    const running = () => ["3011", "3012", "3013"].flatMap((marker) => processesWith(marker));
    await expect.poll(() => running().length).toBe(3);
    const cancelled = await daemon.request("POST", "/api/v1/fighters/shelly/cancel");
    expect(cancelled.status).toBe(200);
    const reply = await pending;
    expect(reply.status).toBe(409);
    expect(reply.body.error?.code).toBe("CANCELLED");
    // The one that left the group with setsid too: the sandbox's PID namespace died with it.
    await expect.poll(() => running()).toEqual([]);
  });

  it("kills the command and its grandchild when the kernel's tool timeout ends the call", async () => {
    const [result] = await shell("shelly", { command: "sleep 3021 & (setsid sleep 3022 &); sleep 3023" });
    expect(failed(result)).toEqual({ code: "MOVE_TIMEOUT", message: "shell_exec did not finish within 8 s" });
    await expect.poll(() => ["3021", "3022", "3023"].flatMap((m) => processesWith(m))).toEqual([]);
  });

  it("refuses a [moves.shell] table its schema does not allow, before the daemon starts", async () => {
    const bad = tempHome();
    try {
      writeFileSync(join(bad, "config.toml"), '[moves.shell]\npath = "bin:/usr/bin"\n');
      const relative = await runCli(bad, ["start"]);
      expect(relative.code).toBe(1);
      expect(relative.stderr).toContain(
        '"moves.shell.path" must be absolute folders separated by : (like /usr/local/bin:/usr/bin:/bin) (CONFIG_INVALID)',
      );
      writeFileSync(join(bad, "config.toml"), "[moves.shell]\ntimeout = 5\n");
      const unknown = await runCli(bad, ["start"]);
      expect(unknown.stderr).toContain('unknown key "moves.shell.timeout" (CONFIG_INVALID)');
    } finally {
      removeHome(bad);
    }
  });
});
