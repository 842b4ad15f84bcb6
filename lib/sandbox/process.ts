import { spawn } from "node:child_process";
import { SparError } from "../../sdk/errors.js";
import { type CollectedOutput, collectOutput } from "./output.js";

export interface CommandSpec {
  /** The program and its arguments, exactly as the program gets them (no shell in between). */
  argv: readonly string[];
  cwd: string;
  /** The whole environment: nothing else is inherited. */
  env: Record<string, string>;
  stdin?: string;
  timeoutMs: number;
  maxOutputBytes: number;
  /** When it fires (the turn is cancelled, the kernel's tool timeout), the command is stopped. */
  signal: AbortSignal;
  /** Between SIGTERM and SIGKILL when the command is stopped. */
  killGraceMs?: number;
  /** Applied to each stream's kept text (secret masking). */
  transform?: (text: string, cut: boolean) => string;
  /** `cwd` is where the program runs only when no sandbox wraps it; the spawn itself runs here. */
  spawnCwd?: string;
}

/** How a process ended: its output (cut to the limit), its exit code or the signal that ended it, and whether time ran out. */
export interface CommandResult extends CollectedOutput {
  exit_code: number | null;
  signal: string | null;
  timed_out: boolean;
}

/**
 * Under the kernel's 2 s grace for moves that ignore a cancellation, so the move still settles itself
 * after a SIGKILL.
 */
const KILL_GRACE_MS = 1000;

/**
 * Runs one command in a process group of its own (`detached`: the child calls setsid), so stopping
 * it reaches every process it started: a timeout or `signal` sends SIGTERM to the group, then
 * SIGKILL after the grace; and when the command itself exits, whatever it left running in its group
 * is killed at once. (Unsandboxed, a process that moves itself to another session with setsid
 * escapes the group; in the sandbox the command is bubblewrap, and its PID namespace dies with it,
 * whatever left the group.) Output past `maxOutputBytes` stops the command at once: a flood
 * (`yes`) gives the model nothing more, so it must not burn CPU to the timeout. A non-zero exit is
 * a result, not an error; a program that cannot be started is NOT_FOUND or FORBIDDEN. Rejects with
 * the signal's reason when `signal` fires, once the command is gone.
 */
export function runCommand(spec: CommandSpec): Promise<CommandResult> {
  const { argv, signal } = spec;
  const grace = spec.killGraceMs ?? KILL_GRACE_MS;
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const child = spawn(argv[0] as string, argv.slice(1), {
      cwd: spec.spawnCwd ?? spec.cwd,
      env: spec.env,
      detached: true,
      stdio: ["pipe", "pipe", "pipe"],
    });
    const output = collectOutput(spec.maxOutputBytes);
    const timers: NodeJS.Timeout[] = [];
    let timedOut = false;
    let stopping = false;
    let failure: Error | undefined;

    const signalGroup = (name: NodeJS.Signals) => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, name);
      } catch {
        // ESRCH: the group is already gone.
      }
    };
    const stop = () => {
      if (stopping) return;
      stopping = true;
      signalGroup("SIGTERM");
      timers.push(setTimeout(() => signalGroup("SIGKILL"), grace));
    };
    /** The output cap was passed: nothing more is kept, so the command ends now, no grace. */
    const stopNow = () => {
      stopping = true;
      signalGroup("SIGKILL");
    };
    const onAbort = () => stop();
    signal.addEventListener("abort", onAbort, { once: true });
    timers.push(
      setTimeout(() => {
        timedOut = true;
        stop();
      }, spec.timeoutMs),
    );

    const take = (name: "stdout" | "stderr") => (chunk: Buffer) => {
      output.add(name, chunk);
      if (output.full()) stopNow();
    };
    child.stdout.on("data", take("stdout"));
    child.stderr.on("data", take("stderr"));
    // EPIPE when the program exits without reading all of its input: not the call's failure.
    child.stdin.on("error", () => {});
    child.stdin.end(spec.stdin ?? "");

    child.once("error", (err: NodeJS.ErrnoException) => {
      failure = startError(err, argv[0] as string, spec.env.PATH ?? "");
    });
    child.once("exit", () => {
      signalGroup("SIGKILL");
      // A process that left the group may still hold the pipes open: stop waiting for them.
      timers.push(
        setTimeout(() => {
          child.stdout.destroy();
          child.stderr.destroy();
        }, grace),
      );
    });
    child.once("close", (code, name) => {
      for (const timer of timers) clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
      if (signal.aborted) reject(signal.reason);
      else if (failure) reject(failure);
      else
        resolve({
          exit_code: code,
          signal: name,
          timed_out: timedOut,
          ...output.finish(spec.transform),
        });
    });
  });
}

function startError(err: NodeJS.ErrnoException, program: string, path: string): Error {
  const shown = JSON.stringify(program);
  if (err.code === "ENOENT") {
    return new SparError(
      "NOT_FOUND",
      program.includes("/")
        ? `no program at ${shown}`
        : `no program named ${shown} in any folder of PATH (${path})`,
    );
  }
  if (err.code === "EACCES") return new SparError("FORBIDDEN", `${shown} cannot be run: permission denied`);
  if (err.code === "E2BIG")
    return new SparError("PAYLOAD_TOO_LARGE", "the arguments are larger than the system allows");
  return new SparError("INTERNAL", `${shown} could not be started: ${err.code ?? err.message}`);
}
