/**
 * Runs cloudflared and waits until its tunnel is up: a registered connection to Cloudflare's edge,
 * and for a quick tunnel the URL it printed. The process is kept (the tunnel lives as long as it
 * does) and stopped by the caller. It gets only the environment it needs: PATH, HOME, locale, proxy
 * settings and its own TUNNEL_* / CLOUDFLARED_* variables, never the daemon's keys and tokens.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { type Logger, SparError } from "../../sdk/index.js";
import { isRegistered, logLine, quickTunnelUrl } from "./output.js";

export const INSTALL_URL =
  "https://developers.cloudflare.com/cloudflare-one/connections/connect-networks/downloads/";

export const INSTALL_ADVICE =
  `install it from ${INSTALL_URL} ` +
  '(Debian: the cloudflare apt repository), or set [tunnel] mode = "manual" with the URL of your own reverse proxy';

export interface CloudflaredOptions {
  /** The executable: a name looked up in PATH, or a path. */
  executable: string;
  args: string[];
  /** Whether the URL comes from the output (a quick tunnel); otherwise a registered connection is enough. */
  quick: boolean;
  /** How long to wait for the tunnel before giving up (and stopping the process). */
  timeoutMs: number;
  log: Logger;
  /** Aborted when the daemon closes: a start still waiting gives up and stops the process. */
  signal: AbortSignal;
  /** The whole environment cloudflared gets (cloudflaredEnv of the daemon's); nothing is inherited. */
  env: NodeJS.ProcessEnv;
}

/** A cloudflared whose tunnel is up. */
export interface RunningCloudflared {
  /** The quick tunnel's URL (`https://….trycloudflare.com`); undefined for a named tunnel. */
  readonly url: string | undefined;
  readonly pid: number | undefined;
  /** Called once if the process ends by itself (not through `stop`), with how it ended. */
  onExit(listener: (how: string) => void): void;
  /** Stops the process (SIGTERM, SIGKILL after 5 s) and resolves once it has exited. */
  stop(): Promise<void>;
}

/** Starts cloudflared and resolves once its tunnel is up; rejects with a clear SparError otherwise. */
export function startCloudflared(options: CloudflaredOptions): Promise<RunningCloudflared> {
  const { executable, log } = options;
  const child = spawn(executable, options.args, {
    stdio: ["ignore", "pipe", "pipe"],
    env: options.env,
  });
  const exited = new Promise<string>((done) =>
    child.once("close", (code, signal) => done(signal ? `signal ${signal}` : `exit code ${code}`)),
  );
  const tail: string[] = [];
  let url: string | undefined;
  let registered = false;
  let stopping = false;
  const exitListeners: ((how: string) => void)[] = [];

  const running: RunningCloudflared = {
    get url() {
      return url;
    },
    pid: child.pid,
    onExit: (listener) => exitListeners.push(listener),
    async stop() {
      stopping = true;
      await stopProcess(child, exited);
    },
  };

  return new Promise((resolve, reject) => {
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal.removeEventListener("abort", onAbort);
      outcome();
    };
    const fail = (err: SparError) =>
      settle(() => {
        stopping = true;
        void stopProcess(child, exited);
        reject(err);
      });
    const lastLines = () => (tail.length > 0 ? `; its last lines: ${tail.join(" | ")}` : "");
    const timer = setTimeout(
      () =>
        fail(
          new SparError(
            "TUNNEL_UNAVAILABLE",
            `cloudflared opened no tunnel within ${options.timeoutMs / 1000} s${lastLines()}`,
            { reason: "cloudflared_timeout" },
          ),
        ),
      options.timeoutMs,
    );
    const onAbort = () =>
      fail(new SparError("CANCELLED", "the daemon is stopping: the tunnel was not opened"));
    options.signal.addEventListener("abort", onAbort, { once: true });
    if (options.signal.aborted) onAbort();

    child.once("error", (err) => fail(spawnError(err as NodeJS.ErrnoException, executable)));
    void exited.then((how) => {
      if (!settled) {
        fail(
          new SparError(
            "TUNNEL_UNAVAILABLE",
            `cloudflared stopped (${how}) before its tunnel was up${lastLines()}`,
            { reason: "cloudflared_failed" },
          ),
        );
      } else if (!stopping) {
        for (const listener of exitListeners) listener(how);
      }
    });

    const read = (line: string) => {
      const shown = logLine(line);
      if (!shown.trim()) return;
      log.info("cloudflared", { line: shown });
      tail.push(shown);
      if (tail.length > 4) tail.shift();
      if (options.quick) url ??= quickTunnelUrl(shown);
      registered ||= isRegistered(shown);
      if (registered && (url || !options.quick)) settle(() => resolve(running));
    };
    for (const stream of [child.stdout, child.stderr]) {
      if (stream) createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY }).on("line", read);
    }
  });
}

/**
 * What a failed spawn means for the user: not installed, or not runnable. The tunnel is then
 * unavailable (503), not broken inside the daemon (500): `reason` is the stable part a client reads.
 */
function spawnError(err: NodeJS.ErrnoException, executable: string): SparError {
  if (err.code === "ENOENT") {
    const where = executable === "cloudflared" ? "no cloudflared in PATH" : `${executable} was not found`;
    return new SparError("TUNNEL_UNAVAILABLE", `cloudflared is not installed (${where}): ${INSTALL_ADVICE}`, {
      reason: "cloudflared_not_installed",
      install: INSTALL_URL,
    });
  }
  if (err.code === "EACCES") {
    return new SparError(
      "TUNNEL_UNAVAILABLE",
      `cannot run ${executable}: permission denied (make it executable, or set [tunnel] cloudflared to the right path)`,
      { reason: "cloudflared_not_runnable" },
    );
  }
  return new SparError("TUNNEL_UNAVAILABLE", `cannot run ${executable}: ${err.message}`, {
    reason: "cloudflared_not_runnable",
  });
}

async function stopProcess(child: ChildProcess, exited: Promise<string>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  child.kill("SIGTERM");
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((done) => {
    timer = setTimeout(() => {
      child.kill("SIGKILL");
      done();
    }, 5000);
  });
  await Promise.race([exited, late]);
  clearTimeout(timer);
  await exited;
}

/** Variables cloudflared may see: what a program needs to run and reach the network, and its own settings. */
const PASSED =
  /^(PATH|HOME|USER|LOGNAME|SHELL|LANG|LC_[A-Z]+|TZ|TMPDIR|TEMP|TMP|SYSTEMROOT|USERPROFILE|APPDATA|LOCALAPPDATA|SSL_CERT_FILE|SSL_CERT_DIR|NO_AUTOUPDATE|TUNNEL_[A-Z0-9_]+|CLOUDFLARED_[A-Z0-9_]+)$/i;
const PROXY = /^(HTTPS?_PROXY|ALL_PROXY|NO_PROXY)$/i;

/** The daemon's environment cut down to what cloudflared needs (no provider keys, bot tokens or master key). */
export function cloudflaredEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([name]) => PASSED.test(name) || PROXY.test(name)));
}
