import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { isSparError } from "../../sdk/index.js";
import { findTool, runCommand } from "./run.js";

/** Real processes: a process counts as gone when /proc no longer has it, or it is an unreaped zombie. */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

const SH = findTool("sh", "/usr/bin:/bin") as string;
const base = { env: { PATH: "/usr/bin:/bin", HOME: "/" }, timeoutMs: 30_000 };
const never = () => new AbortController().signal;

describe.skipIf(process.platform !== "linux")("running a desktop command", () => {
  const dir = mkdtempSync(join(tmpdir(), "spar-run-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("finds tools on the given PATH only, executable files only, absolute folders only", () => {
    writeFileSync(join(dir, "not-executable"), "#!/bin/sh\n");
    writeFileSync(join(dir, "tool"), "#!/bin/sh\necho tool\n");
    chmodSync(join(dir, "tool"), 0o755);
    expect(findTool("tool", `relative:${dir}`)).toBe(join(dir, "tool"));
    expect(findTool("not-executable", dir)).toBeUndefined();
    expect(findTool("tool", "relative")).toBeUndefined();
    expect(findTool("sh", dir)).toBeUndefined();
  });

  it("gives the command exactly the environment it is handed, and its stdin", async () => {
    const env = await runCommand(SH, ["-c", "env | sort"], { ...base, signal: never() });
    expect(
      env.stdout
        .trim()
        .split("\n")
        .filter((l) => !l.startsWith("PWD=") && !l.startsWith("SHLVL=") && !l.startsWith("_=")),
    ).toEqual(["HOME=/", "PATH=/usr/bin:/bin"]);
    const echoed = await runCommand(SH, ["-c", "cat"], {
      ...base,
      signal: never(),
      stdin: "typed $(nothing) `runs`",
    });
    expect(echoed).toEqual({ code: 0, stdout: "typed $(nothing) `runs`", stderr: "" });
  });

  it("pipes one stage into the next and reports the first failing exit code", async () => {
    const tr = findTool("tr", "/usr/bin:/bin") as string;
    const piped = await runCommand(SH, ["-c", "echo desktop"], {
      ...base,
      signal: never(),
      pipeTo: { file: tr, args: ["a-z", "A-Z"] },
    });
    expect(piped.stdout.trim()).toBe("DESKTOP");
    const failed = await runCommand(SH, ["-c", "echo oops >&2; exit 3"], { ...base, signal: never() });
    expect(failed).toMatchObject({ code: 3, stderr: "oops\n" });
  });

  it("kills the command and what it started when the time is up", async () => {
    const pidFile = join(dir, "timeout.pid");
    const error = await runCommand(SH, ["-c", `sleep 300 & echo $! > ${pidFile}; wait`], {
      ...base,
      timeoutMs: 1500,
      signal: never(),
    }).catch((e: unknown) => e);
    expect(isSparError(error, "MOVE_TIMEOUT")).toBe(true);
    expect((error as Error).message).toMatch(/did not finish within 1.5 s \(\[moves\.desktop\] timeout_s\)/);
    const sleeper = Number(readFileSync(pidFile, "utf8"));
    await expect.poll(() => alive(sleeper)).toBe(false);
  });

  it("kills the command and what it started when the turn is cancelled, with the turn's reason", async () => {
    const pidFile = join(dir, "cancel.pid");
    const controller = new AbortController();
    const running = runCommand(SH, ["-c", `sleep 300 & echo $! > ${pidFile}; wait`], {
      ...base,
      signal: controller.signal,
    });
    await expect
      .poll(() => readFileSync(pidFile, { encoding: "utf8", flag: "a+" }).trim().length)
      .toBeGreaterThan(0);
    const sleeper = Number(readFileSync(pidFile, "utf8"));
    expect(alive(sleeper)).toBe(true);
    controller.abort();
    const error = await running.catch((e: unknown) => e);
    expect(isSparError(error, "CANCELLED")).toBe(true);
    await expect.poll(() => alive(sleeper)).toBe(false);
  });

  it("returns when a launcher exits, even if the app it started keeps its output open", async () => {
    const launched = await runCommand(SH, ["-c", "sleep 300 & echo $!"], { ...base, signal: never() });
    expect(launched.code).toBe(0);
    const app = Number(launched.stdout.trim());
    expect(alive(app)).toBe(true);
    process.kill(app, "SIGKILL");
  });
});
