import { type ChildProcess, spawn } from "node:child_process";
import { accessSync, constants, existsSync, statSync } from "node:fs";
import { delimiter, join, resolve } from "node:path";
import { ReadBuffer, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

/** How much of the server's stderr is kept to say why it failed. */
const STDERR_TAIL_CHARS = 4096;
/** How long a server is given to exit once its stdin is closed, then once sent SIGTERM. */
const EXIT_GRACE_MS = 2000;

export interface ProcessSpec {
  command: string;
  args: readonly string[];
  /** The child's whole environment. */
  env: Readonly<Record<string, string>>;
  cwd: string;
}

/**
 * The MCP stdio transport (newline-delimited JSON-RPC over the child's stdin and stdout, framed by
 * the SDK's own ReadBuffer), with three differences from the SDK's StdioClientTransport, which is why
 * it exists:
 * - the child gets exactly `env` (settings.ts builds it): the SDK's transport would add HOME,
 *   LOGNAME, PATH, SHELL, TERM and USER from the daemon's environment behind the config's back;
 * - the child leads its own process group, and closing kills the group, so a server started through
 *   a wrapper (npx, a shell script) leaves no grandchild behind;
 * - the end of its stderr is kept, to say why it failed.
 * A bare command name is looked up on the daemon's PATH (the child's may be set otherwise).
 */
export class ProcessTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T) => void;

  private child?: ChildProcess;
  private readonly buffer = new ReadBuffer();
  private stderr = "";
  private exited?: { code: number | null; signal: NodeJS.Signals | null };

  constructor(private readonly spec: ProcessSpec) {}

  /** The server's pid while it runs. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** The last lines the server wrote to stderr (up to 4 KiB). */
  get stderrTail(): string {
    return this.stderr;
  }

  /** How the process ended, in words ("exited with code 1", "was killed by SIGKILL"), once it has. */
  get exitDescription(): string | undefined {
    if (!this.exited) return undefined;
    const { code, signal } = this.exited;
    return signal ? `was killed by ${signal}` : `exited with code ${code}`;
  }

  start(): Promise<void> {
    if (this.child) return Promise.reject(new Error("the server process is already started"));
    let spawned = false;
    return new Promise((done, fail) => {
      // A throw in here (no such folder or command) rejects the promise.
      if (!existsSync(this.spec.cwd))
        throw new Error(`its working directory ${this.spec.cwd} does not exist`);
      const command = resolveCommand(this.spec.command, this.spec.cwd);
      const child = spawn(command, [...this.spec.args], {
        env: { ...this.spec.env },
        cwd: this.spec.cwd,
        stdio: ["pipe", "pipe", "pipe"],
        detached: true,
        shell: false,
      });
      this.child = child;
      child.once("error", (err) => {
        fail(err);
        this.onerror?.(err);
      });
      child.once("spawn", () => {
        spawned = true;
        done();
      });
      child.once("close", (code, signal) => {
        if (spawned) this.exited = { code, signal };
        this.child = undefined;
        killGroup(child.pid, "SIGKILL");
        this.onclose?.();
      });
      child.stdin?.on("error", (err) => this.onerror?.(err));
      child.stdout?.on("data", (chunk: Buffer) => this.receive(chunk));
      child.stderr?.on("data", (chunk: Buffer) => {
        this.stderr = (this.stderr + chunk.toString("utf8")).slice(-STDERR_TAIL_CHARS);
      });
    });
  }

  private receive(chunk: Buffer): void {
    try {
      this.buffer.append(chunk);
    } catch (err) {
      this.onerror?.(err as Error);
      void this.close();
      return;
    }
    for (;;) {
      try {
        const message = this.buffer.readMessage();
        if (message === null) break;
        this.onmessage?.(message);
      } catch (err) {
        // A line that is not JSON-RPC (a server logging to stdout): reported, and skipped.
        this.onerror?.(err as Error);
      }
    }
  }

  /** Closes stdin, then SIGTERM to the group after 2 s, then SIGKILL after 2 s more. */
  async close(): Promise<void> {
    const child = this.child;
    if (!child) return;
    const closed = new Promise<void>((done) => child.once("close", () => done()));
    const within = (ms: number) =>
      Promise.race([
        closed.then(() => true),
        new Promise<false>((done) => setTimeout(done, ms, false).unref()),
      ]);
    child.stdin?.end();
    if (await within(EXIT_GRACE_MS)) return;
    killGroup(child.pid, "SIGTERM");
    if (await within(EXIT_GRACE_MS)) return;
    killGroup(child.pid, "SIGKILL");
    await within(EXIT_GRACE_MS);
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.child?.stdin;
    if (!stdin || stdin.destroyed) return Promise.reject(new Error("the server process is not running"));
    return new Promise((done) => {
      if (stdin.write(serializeMessage(message))) done();
      else stdin.once("drain", done);
    });
  }
}

/** Signals the process group a detached child leads; nothing to do when it is gone already. */
function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: the group has no process left.
  }
}

/**
 * The program to run: a path (anything with a `/`) is taken from `cwd`; a bare name is looked up on
 * the daemon's PATH, as a shell would, because the server's own environment may have no PATH.
 */
export function resolveCommand(command: string, cwd: string, path = process.env.PATH ?? ""): string {
  if (command.includes("/")) {
    const file = resolve(cwd, command);
    if (!existsSync(file)) throw new Error(`command "${command}" does not exist (${file})`);
    if (!isExecutableFile(file)) throw new Error(`command "${command}" is not an executable file (${file})`);
    return file;
  }
  for (const dir of path.split(delimiter)) {
    if (dir && isExecutableFile(join(dir, command))) return join(dir, command);
  }
  throw new Error(`command "${command}" was not found on the daemon's PATH; give its full path`);
}

function isExecutableFile(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}
