import { spawn } from "node:child_process";
import { isAbsolute } from "node:path";
import { cancelledError, isSparError, SparError } from "../../sdk/index.js";

/** What one command of a desktop move gets: argv only (no shell), a cleared environment, a deadline. */
export interface CommandOptions {
  env: Record<string, string>;
  timeoutMs: number;
  signal: AbortSignal;
  /** Written to the command's standard input, which is then closed. */
  stdin?: string;
  /** The command's standard output goes to this command's standard input (a two-stage pipeline). */
  pipeTo?: { file: string; args: string[] };
}

export interface CommandResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A command's output kept for its error message: enough to read, never a flood. */
const KEEP_OUTPUT = 8_000;

/**
 * The absolute path of `name` in `path` (a PATH string), or undefined. Resolved here, not by the
 * child, so "not installed" is known before anything runs and the error can name the tool.
 */
export { findProgram as findTool } from "../../sdk/kits/sandbox.js";

/**
 * Runs `file args` (and the optional second stage it pipes into) in a process group of its own, so
 * a timeout or a cancelled turn kills the command and everything it started. The result is known
 * when the command exits: a launcher (`xdg-open`) may leave an app holding its pipes, and the move
 * must not wait for the app.
 */
export function runCommand(file: string, args: string[], options: CommandOptions): Promise<CommandResult> {
  if (options.signal.aborted) return Promise.reject(stopped(options.signal));
  return new Promise((resolve, reject) => {
    const spawnOne = (command: string, argv: string[]) =>
      spawn(command, argv, {
        env: options.env,
        cwd: options.env.HOME && isAbsolute(options.env.HOME) ? options.env.HOME : "/",
        stdio: ["pipe", "pipe", "pipe"],
        detached: true,
      });
    const first = spawnOne(file, args);
    const second = options.pipeTo ? spawnOne(options.pipeTo.file, options.pipeTo.args) : undefined;
    const children = second ? [first, second] : [first];
    let stdout = "";
    let stderr = "";
    let settled = false;
    const last = second ?? first;
    const keep = (text: string, chunk: Buffer) => (text + chunk.toString()).slice(-KEEP_OUTPUT);
    last.stdout.on("data", (chunk: Buffer) => {
      stdout = keep(stdout, chunk);
    });
    for (const child of children) {
      child.stderr.on("data", (chunk: Buffer) => {
        stderr = keep(stderr, chunk);
      });
      // A stage that dies early closes its pipe; the write error is not the command's failure.
      child.stdin.on("error", () => {});
    }
    if (second) {
      first.stdout.pipe(second.stdin);
      first.stdin.end();
    } else if (options.stdin !== undefined) first.stdin.end(options.stdin);
    else first.stdin.end();

    const killAll = () => {
      for (const child of children) {
        if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) continue;
        try {
          process.kill(-child.pid, "SIGKILL");
        } catch {}
      }
    };
    const finish = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal.removeEventListener("abort", onAbort);
      outcome();
    };
    const onAbort = () => {
      killAll();
      finish(() => reject(stopped(options.signal)));
    };
    const timer = setTimeout(() => {
      killAll();
      finish(() =>
        reject(
          new SparError(
            "MOVE_TIMEOUT",
            `${file} did not finish within ${options.timeoutMs / 1000} s ([moves.desktop] timeout_s) and was killed`,
          ),
        ),
      );
    }, options.timeoutMs);
    options.signal.addEventListener("abort", onAbort, { once: true });
    for (const child of children) {
      child.once("error", (err) => {
        killAll();
        finish(() => reject(new SparError("INTERNAL", `could not run ${file}: ${err.message}`)));
      });
    }
    let exited = 0;
    const exitCodes: (number | null)[] = [];
    for (const child of children) {
      child.once("exit", (code) => {
        exitCodes.push(code);
        exited += 1;
        if (exited < children.length) return;
        // Output written just before the exit may still be in the pipe: read it, but wait for no app.
        const drained = new Promise<void>((done) => {
          if (last.stdout.readableEnded) return done();
          last.stdout.once("end", () => done());
          setTimeout(done, 200).unref();
        });
        void drained.then(() => {
          for (const c of children) {
            c.stdout.destroy();
            c.stderr.destroy();
          }
          const failed = exitCodes.find((c) => c !== 0);
          finish(() => resolve({ code: failed === undefined ? 0 : failed, stdout, stderr }));
        });
      });
    }
  });
}

/** The abort's own reason (the kernel aborts with CANCELLED or MOVE_TIMEOUT), or a cancellation. */
function stopped(signal: AbortSignal): SparError {
  return isSparError(signal.reason) ? signal.reason : cancelledError(signal);
}

/** A command's failure, in words the model can act on, with the command's own last words. */
export function commandFailed(what: string, result: CommandResult): SparError {
  const said = (result.stderr.trim() || result.stdout.trim()).split("\n").slice(-5).join(" | ");
  return new SparError(
    "INTERNAL",
    `${what} failed (exit code ${result.code ?? "none: killed by a signal"})${said ? `: ${said}` : ""}`,
  );
}
