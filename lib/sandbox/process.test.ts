import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isSparError } from "../../sdk/errors.js";
import { type CommandSpec, runCommand } from "./process.js";

/** A process counts as gone when /proc no longer has it, or it is a zombie nobody reaped yet. */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

const readPid = (dir: string, name: string) => Number(readFileSync(join(dir, name), "utf8").trim());
const written = (dir: string, name: string) =>
  existsSync(join(dir, name)) && readFileSync(join(dir, name), "utf8").endsWith("\n");

describe("runCommand", () => {
  let dir: string;
  const spec = (argv: string[], extra: Partial<CommandSpec> = {}): CommandSpec => ({
    argv,
    cwd: dir,
    env: { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: dir, LANG: "C.UTF-8" },
    timeoutMs: 30_000,
    maxOutputBytes: 65_536,
    signal: new AbortController().signal,
    ...extra,
  });

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "moves-shell-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("passes shell metacharacters to the program as plain arguments", async () => {
    const args = [
      "a; touch pwned",
      "$(touch pwned2)",
      "`touch pwned3`",
      "x && touch y",
      "a | b",
      "l1\nl2",
      "*",
    ];
    const result = await runCommand(spec(["printf", "%s\\n", ...args]));
    expect(result).toMatchObject({
      exit_code: 0,
      signal: null,
      stderr: "",
      truncated: false,
      timed_out: false,
    });
    expect(result.stdout).toBe(`${args.join("\n")}\n`);
    expect(readdirSync(dir)).toEqual([]);
  });

  it("gives the program exactly the environment it is handed, nothing of this process's", async () => {
    process.env.SPAR_TEST_CANARY = "canary-value-in-the-parent";
    try {
      const result = await runCommand(spec(["env"]));
      expect(result.stdout.trim().split("\n").sort()).toEqual([
        `HOME=${dir}`,
        "LANG=C.UTF-8",
        "PATH=/usr/local/bin:/usr/bin:/bin",
      ]);
    } finally {
      delete process.env.SPAR_TEST_CANARY;
    }
  });

  it("runs in the folder it is given", async () => {
    expect((await runCommand(spec(["pwd"]))).stdout).toBe(`${dir}\n`);
  });

  it("returns a non-zero exit with both streams as a result", async () => {
    const result = await runCommand(spec(["sh", "-c", "echo out; echo err >&2; exit 3"]));
    expect(result).toEqual({
      exit_code: 3,
      signal: null,
      stdout: "out\n",
      stderr: "err\n",
      truncated: false,
      timed_out: false,
    });
  });

  it("writes stdin to the program, and survives a program that reads none of it", async () => {
    expect((await runCommand(spec(["cat"], { stdin: "hello\nworld" }))).stdout).toBe("hello\nworld");
    const ignored = await runCommand(spec(["true"], { stdin: "x".repeat(1 << 20) }));
    expect(ignored.exit_code).toBe(0);
  });

  it("stops a command at its timeout and says so", async () => {
    const result = await runCommand(spec(["sleep", "30"], { timeoutMs: 200 }));
    expect(result).toMatchObject({ exit_code: null, signal: "SIGTERM", timed_out: true });
  });

  it("kills a command that ignores SIGTERM after the grace", async () => {
    const result = await runCommand(
      spec(["sh", "-c", "trap '' TERM; echo ready; sleep 30; sleep 30"], {
        timeoutMs: 300,
        killGraceMs: 200,
      }),
    );
    expect(result).toMatchObject({ exit_code: null, signal: "SIGKILL", timed_out: true, stdout: "ready\n" });
  });

  it("kills the whole process group when the signal fires, grandchildren included", async () => {
    const controller = new AbortController();
    const reason = new Error("turn cancelled");
    const running = runCommand(
      spec(["sh", "-c", "sleep 30 & echo $! > grandchild.pid; echo $$ > child.pid; wait"], {
        signal: controller.signal,
      }),
    );
    // The shell creates each file before it writes the pid into it: wait for the whole line.
    await expect.poll(() => written(dir, "child.pid") && written(dir, "grandchild.pid")).toBe(true);
    const child = readPid(dir, "child.pid");
    const grandchild = readPid(dir, "grandchild.pid");
    expect(alive(child) && alive(grandchild)).toBe(true);
    controller.abort(reason);
    await expect(running).rejects.toBe(reason);
    expect(alive(child)).toBe(false);
    await expect.poll(() => alive(grandchild)).toBe(false);
  });

  it("kills a grandchild that ignores SIGTERM when the signal fires", async () => {
    const controller = new AbortController();
    const running = runCommand(
      spec(["sh", "-c", "trap '' TERM; sleep 30 & echo $! > grandchild.pid; wait"], {
        signal: controller.signal,
        killGraceMs: 200,
      }),
    );
    await expect.poll(() => written(dir, "grandchild.pid")).toBe(true);
    const grandchild = readPid(dir, "grandchild.pid");
    controller.abort(new Error("stop"));
    await expect(running).rejects.toThrow("stop");
    await expect.poll(() => alive(grandchild)).toBe(false);
  });

  it("leaves nothing running that the command started in the background", async () => {
    const result = await runCommand(spec(["sh", "-c", "trap '' TERM; sleep 30 >/dev/null 2>&1 & echo $!"]));
    expect(result.exit_code).toBe(0);
    const background = Number(result.stdout.trim());
    await expect.poll(() => alive(background)).toBe(false);
  });

  it("stops waiting for a process that left the group but keeps the pipes open", async () => {
    const result = await runCommand(
      spec(
        [
          "sh",
          "-c",
          "setsid sh -c 'echo $$ > escaped.pid; exec sleep 30' & while [ ! -s escaped.pid ]; do sleep 0.05; done",
        ],
        { killGraceMs: 200, timeoutMs: 10_000 },
      ),
    );
    const escaped = readPid(dir, "escaped.pid");
    try {
      expect(result).toMatchObject({ exit_code: 0, timed_out: false });
      expect(alive(escaped)).toBe(true);
    } finally {
      process.kill(escaped, "SIGKILL");
    }
  });

  it("refuses to start once the signal has fired", async () => {
    const controller = new AbortController();
    controller.abort(new Error("already cancelled"));
    await expect(runCommand(spec(["touch", "started"], { signal: controller.signal }))).rejects.toThrow(
      "already cancelled",
    );
    expect(existsSync(join(dir, "started"))).toBe(false);
  });

  it("caps stdout and stderr together, and marks the cut", async () => {
    const result = await runCommand(
      spec(["sh", "-c", "head -c 3000 /dev/zero | tr '\\0' a; head -c 3000 /dev/zero | tr '\\0' b >&2"], {
        maxOutputBytes: 4096,
      }),
    );
    expect(result.truncated).toBe(true);
    expect(result.stdout).toBe("a".repeat(3000));
    expect(result.stderr).toBe(
      `${"b".repeat(1096)}\n[cut: 1904 more bytes of stderr not shown (the limit is 4096 bytes of output per command); the command was stopped there; filter its output, or write it to a file and read that in parts]`,
    );
  });

  it("stops a command once its output passes the cap, instead of draining a flood to the timeout", async () => {
    const result = await runCommand(spec(["yes"], { maxOutputBytes: 1024, timeoutMs: 20_000 }));
    expect(result).toMatchObject({ exit_code: null, signal: "SIGKILL", truncated: true, timed_out: false });
    expect(result.stdout.startsWith("y\ny\ny\n")).toBe(true);
    expect(result.stdout).toMatch(
      /\[cut: \d+ more bytes of stdout not shown .*the command was stopped there/,
    );
  });

  it("applies the transform to what it keeps", async () => {
    const result = await runCommand(
      spec(["echo", "sk-openai-123456"], {
        transform: (text) => text.replace("sk-openai-123456", "[secret]"),
      }),
    );
    expect(result.stdout).toBe("[secret]\n");
  });

  it("fails with NOT_FOUND for a program that does not exist, naming the PATH", async () => {
    const failure = await runCommand(spec(["no-such-program-here"])).catch((err: unknown) => err);
    expect(isSparError(failure, "NOT_FOUND")).toBe(true);
    expect((failure as Error).message).toBe(
      'no program named "no-such-program-here" in any folder of PATH (/usr/local/bin:/usr/bin:/bin)',
    );
    const byPath = await runCommand(spec(["./missing"])).catch((err: unknown) => err);
    expect((byPath as Error).message).toBe('no program at "./missing"');
  });

  it("fails with FORBIDDEN for a file that cannot be run", async () => {
    writeFileSync(join(dir, "script"), "#!/bin/sh\necho hi\n", { mode: 0o644 });
    const failure = await runCommand(spec(["./script"])).catch((err: unknown) => err);
    expect(isSparError(failure, "FORBIDDEN")).toBe(true);
    expect((failure as Error).message).toBe('"./script" cannot be run: permission denied');
  });
});
