/**
 * The sandbox every process a move starts runs in (DESIGN §17): one place, used by the shell move,
 * the desktop moves' command-line tools and anything later. On Linux it is bubblewrap with limits
 * (bubblewrap.ts, limits.ts, cgroup.ts) and, for a fighter with a `network` grant, the egress proxy
 * (egress.ts); on macOS `sandbox-exec` (macos.ts). `[sandbox] mode = "required"` (the default)
 * refuses to run anything when neither is there, naming what to install; `"off"` runs processes
 * unsandboxed, with only a cleared environment, limits of time and output, and a process group.
 */
import { execFile, execFileSync } from "node:child_process";
import { accessSync, constants, mkdirSync, mkdtempSync, realpathSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, isAbsolute, join, resolve } from "node:path";
import type { SandboxConfig } from "../../sdk/config.js";
import { SparError } from "../../sdk/errors.js";
import { parseAllowPrivate } from "../web/policy.js";
import { bwrapArgs } from "./bubblewrap.js";
import { inCgroup, pidsCgroup, pidsCgroupBase } from "./cgroup.js";
import { type EgressProxy, type EgressRules, openEgress } from "./egress.js";
import { withLimits } from "./limits.js";
import { seatbeltProfile } from "./macos.js";
import { type CommandResult, runCommand } from "./process.js";

export type { EgressRules } from "./egress.js";
export type { CommandResult } from "./process.js";

/** What runs the sandbox here, or nothing. */
export type SandboxKind = "bubblewrap" | "sandbox-exec" | "none";

/** What the sandbox is here (`Sandbox.status`): for `spar doctor`, the security audit and a refusal's words. */
export interface SandboxStatus {
  mode: SandboxConfig["mode"];
  kind: SandboxKind;
  /** The sandbox program, when found. */
  program?: string;
  /** A process can be started: sandboxed, or `mode = "off"`. */
  ready: boolean;
  /** Why no sandbox is in use, in words naming what to install. */
  problem?: string;
  /** How the processes limit is enforced: rlimit (per user namespace), a pids cgroup, or not at all. */
  processes_limit: "rlimit" | "cgroup" | "none";
}

/** One process to start. */
export interface SandboxedCommand {
  /** The program and its arguments, exactly as the program gets them (no shell in between). */
  argv: readonly string[];
  /** The fighter's workspace: the one folder the process may write. */
  workspace: string;
  /** Where it runs: the workspace or a folder inside it (real paths). */
  cwd: string;
  /** The PATH it gets; the program is looked up there. */
  path: string;
  /** More of its environment (LANG, DISPLAY …); HOME, TMPDIR and PATH are the sandbox's. */
  env?: Record<string, string>;
  stdin?: string;
  timeoutMs: number;
  maxOutputBytes: number;
  signal: AbortSignal;
  killGraceMs?: number;
  transform?: (text: string, cut: boolean) => string;
  /** Network through the egress proxy under these rules; absent, the process has none. */
  network?: Omit<EgressRules, "allow">;
  /** More of the host the process needs (the desktop moves: the X socket). */
  binds?: readonly { path: string; writable?: boolean }[];
  /**
   * Host folders the process sees read-only at a path of their own (`move.mounts`: the skills'
   * folders at `/skills/<name>`). Only bubblewrap lends them: with `mode = "off"` or sandbox-exec
   * they are not there. One holding the data dir is never mounted.
   */
  mounts?: readonly { source: string; target: string }[];
}

/** Starts processes contained, or refuses to (SANDBOX_UNAVAILABLE) when `[sandbox] mode` requires what is not there. */
export interface Sandbox {
  status(): Promise<SandboxStatus>;
  run(command: SandboxedCommand): Promise<CommandResult>;
}

const INSTALL_HINT =
  "install bubblewrap (Debian/Ubuntu: apt install bubblewrap; Fedora: dnf install bubblewrap; Arch: pacman -S bubblewrap)";

/** A program by name in the folders of `path`, or undefined. */
export function findProgram(name: string, path: string): string | undefined {
  for (const dir of path.split(delimiter)) {
    if (!dir || !isAbsolute(dir)) continue;
    const candidate = join(dir, name);
    try {
      if (!statSync(candidate).isFile()) continue;
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {}
  }
  return undefined;
}

/**
 * The sandbox under `[sandbox]`. `home` is the data dir (denied by name on macOS); `env` the
 * daemon's environment, whose PATH is searched for bwrap and prlimit.
 */
export function createSandbox(
  config: SandboxConfig,
  home: string,
  env: NodeJS.ProcessEnv = process.env,
): Sandbox {
  const allow = parseAllowPrivate(config.allow_private, {
    name: "[sandbox] allow_private",
    path: "sandbox.allow_private",
    who: "the sandbox's egress proxy",
  });
  let checked: Promise<SandboxStatus> | undefined;
  const status = () => {
    checked ??= detect(config, env);
    return checked;
  };
  return {
    status,
    async run(command) {
      if (command.signal.aborted) throw command.signal.reason;
      refuseMissingProgram(command, command.mounts ?? []);
      const found = await status();
      if (!found.ready) throw new SparError("SANDBOX_UNAVAILABLE", found.problem ?? "no sandbox");
      // Only bubblewrap lends the mounts: elsewhere a program under one is not there.
      if (found.kind !== "bubblewrap" && command.mounts?.length) refuseMissingProgram(command, []);
      if (found.kind === "none") return runUnsandboxed(command);
      const egress = command.network
        ? await openEgressFor(found.kind, { ...command.network, allow })
        : undefined;
      try {
        if (found.kind === "sandbox-exec") return await runSeatbelt(command, home, egress);
        const prlimit = findProgram("prlimit", env.PATH ?? "") ?? "/usr/bin/prlimit";
        return await runBubblewrap(
          command,
          config,
          { bwrap: found.program as string, prlimit },
          egress,
          home,
        );
      } finally {
        await egress?.proxy.close();
        if (egress?.dir) rmSync(egress.dir, { recursive: true, force: true });
      }
    },
  };
}

async function detect(config: SandboxConfig, env: NodeJS.ProcessEnv): Promise<SandboxStatus> {
  const path = env.PATH ?? "";
  const limit = pidsCgroupBase() ? "cgroup" : process.getuid?.() === 0 ? "none" : "rlimit";
  const off = (kind: SandboxKind, program?: string): SandboxStatus => ({
    mode: config.mode,
    kind,
    ...(program ? { program } : {}),
    ready: true,
    processes_limit: "none",
  });
  if (config.mode === "off") return off("none");
  if (process.platform === "darwin") {
    const program = findProgram("sandbox-exec", `/usr/bin:${path}`);
    if (program)
      return { mode: config.mode, kind: "sandbox-exec", program, ready: true, processes_limit: "rlimit" };
    return refused(config, "sandbox-exec is not on this Mac (it ships with macOS in /usr/bin)");
  }
  if (process.platform !== "linux")
    return refused(
      config,
      `no sandbox is available on ${process.platform}: Spar sandboxes on Linux and macOS`,
    );
  const bwrap = findProgram("bwrap", path);
  if (!bwrap)
    return refused(config, `bubblewrap (bwrap) is not on the daemon's PATH (${path}): ${INSTALL_HINT}`);
  const prlimit = findProgram("prlimit", path);
  if (!prlimit)
    return refused(config, `prlimit is not on the daemon's PATH (${path}): install util-linux`, bwrap);
  const failure = await probe(bwrap, tmpBytes(bwrap, config));
  if (failure)
    return refused(
      config,
      `bubblewrap at ${bwrap} cannot make a sandbox here: ${failure} (user namespaces may be disabled: see kernel.unprivileged_userns_clone, or the AppArmor rule for bwrap)`,
      bwrap,
    );
  return { mode: config.mode, kind: "bubblewrap", program: bwrap, ready: true, processes_limit: limit };
}

function refused(config: SandboxConfig, problem: string, program?: string): SandboxStatus {
  return {
    mode: config.mode,
    kind: "none",
    ...(program ? { program } : {}),
    ready: false,
    problem: `${problem}; or, accepting the risk, set [sandbox] mode = "off" in config.toml`,
    processes_limit: "none",
  };
}

const sizing = new Map<string, boolean>();

/** `[sandbox] tmp_mb` in bytes, when this bwrap can size a tmpfs (0.8 and later). */
function tmpBytes(bwrap: string, config: SandboxConfig): number | undefined {
  if (!sizing.has(bwrap)) {
    let help = "";
    try {
      help = execFileSync(bwrap, ["--help"], { encoding: "utf8", env: {}, timeout: 5000 });
    } catch {}
    sizing.set(bwrap, help.includes("--size"));
  }
  return sizing.get(bwrap) ? config.tmp_mb * 1024 * 1024 : undefined;
}

/** Starts `true` in a sandbox like the real ones; the error, or undefined when it works. */
async function probe(bwrap: string, tmp: number | undefined): Promise<string | undefined> {
  const dir = mkdtempSync(join(tmpdir(), "spar-sandbox-probe-"));
  try {
    const argv = bwrapArgs({
      bwrap,
      command: ["/bin/sh", "-c", "exit 0"],
      workspace: dir,
      cwd: dir,
      env: { PATH: "/usr/bin:/bin" },
      pathDirs: [],
      ...(tmp === undefined ? {} : { tmpBytes: tmp }),
    });
    return await new Promise((done) => {
      execFile(argv[0] as string, argv.slice(1), { env: {}, timeout: 10_000 }, (err, _out, stderr) =>
        done(err ? stderr.trim() || err.message : undefined),
      );
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The program must exist and be runnable where the sandbox will look (the same folders, mounted
 * read-only): checked here, so a missing one is NOT_FOUND naming the PATH, as before the sandbox.
 */
function refuseMissingProgram(
  command: SandboxedCommand,
  mounts: readonly { source: string; target: string }[],
): void {
  const program = command.argv[0] as string;
  const shown = JSON.stringify(program);
  const target = program.includes("/")
    ? onHost(resolve(command.cwd, program), mounts)
    : findProgram(program, command.path);
  if (!target) {
    throw new SparError("NOT_FOUND", `no program named ${shown} in any folder of PATH (${command.path})`);
  }
  try {
    if (!statSync(target).isFile())
      throw new SparError("FORBIDDEN", `${shown} cannot be run: it is not a file`);
  } catch (err) {
    if (err instanceof SparError) throw err;
    throw new SparError("NOT_FOUND", `no program at ${shown}`);
  }
  try {
    accessSync(target, constants.X_OK);
  } catch {
    throw new SparError("FORBIDDEN", `${shown} cannot be run: permission denied`);
  }
}

/** A path inside the sandbox as the host has it: under a mount's target, the same file in its source. */
function onHost(path: string, mounts: readonly { source: string; target: string }[]): string {
  const mount = mounts.find((m) => path.startsWith(`${m.target}/`));
  return mount ? join(mount.source, path.slice(mount.target.length + 1)) : path;
}

function runUnsandboxed(command: SandboxedCommand): Promise<CommandResult> {
  const tmp = join(command.workspace, ".tmp");
  mkdirSync(tmp, { recursive: true, mode: 0o700 });
  return runCommand({
    ...common(command),
    argv: command.argv,
    cwd: command.cwd,
    env: { ...command.env, PATH: command.path, HOME: command.workspace, TMPDIR: tmp },
  });
}

function common(command: SandboxedCommand) {
  return {
    ...(command.stdin !== undefined ? { stdin: command.stdin } : {}),
    timeoutMs: command.timeoutMs,
    maxOutputBytes: command.maxOutputBytes,
    signal: command.signal,
    ...(command.killGraceMs !== undefined ? { killGraceMs: command.killGraceMs } : {}),
    ...(command.transform ? { transform: command.transform } : {}),
  };
}

interface OpenEgress {
  proxy: EgressProxy;
  /** The folder holding the proxy's socket (Linux), removed after the call. */
  dir?: string;
  socket?: string;
}

async function openEgressFor(kind: SandboxKind, rules: EgressRules): Promise<OpenEgress> {
  if (kind === "sandbox-exec") return { proxy: await openEgress(null, rules) };
  const dir = mkdtempSync(join(tmpdir(), "spar-egress-"));
  const socket = join(dir, "egress.sock");
  return { proxy: await openEgress(socket, rules), dir, socket };
}

/** The forwarder that runs inside the sandbox, beside this file once built. */
const FORWARDER = join(dirname(new URL(import.meta.url).pathname), "egress-forward.js");
/** The proxy port inside the sandbox's own network namespace: no other process is there. */
const SANDBOX_PROXY_PORT = 3128;

async function runBubblewrap(
  command: SandboxedCommand,
  config: SandboxConfig,
  { bwrap, prlimit }: { bwrap: string; prlimit: string },
  egress: OpenEgress | undefined,
  home: string,
): Promise<CommandResult> {
  // A PATH folder holding the data dir (a mistaken "/" or "~") is never mounted: it would lend it.
  const dataDir = resolve(home);
  const holdsDataDir = (dir: string) =>
    dataDir === resolve(dir) || dataDir.startsWith(`${resolve(dir).replace(/\/$/, "")}/`);
  const pathDirs = command.path.split(delimiter).filter((dir) => !holdsDataDir(dir));
  // Nor a mount that would: its path or its real path is the data dir or a folder above it.
  const realDataDir = realOrSelf(dataDir);
  const mounts = (command.mounts ?? []).filter((m) => {
    const real = realOrSelf(m.source);
    return !holdsDataDir(m.source) && real !== realDataDir && !realDataDir.startsWith(`${real}/`);
  });
  const argv = bwrapArgs({
    bwrap,
    command: withLimits(prlimit, config, command.argv),
    workspace: realpathSync(command.workspace),
    cwd: command.cwd,
    env: { ...command.env, PATH: command.path },
    pathDirs: [...pathDirs, dirname(prlimit)],
    ...(tmpBytes(bwrap, config) === undefined ? {} : { tmpBytes: tmpBytes(bwrap, config) as number }),
    ...(command.binds ? { binds: command.binds } : {}),
    ...(mounts.length ? { mounts } : {}),
    ...(egress?.socket
      ? {
          egress: {
            socket: egress.socket,
            port: SANDBOX_PROXY_PORT,
            node: realpathSync(process.execPath),
            script: FORWARDER,
          },
        }
      : {}),
  });
  const cgroup = pidsCgroup(config.processes);
  try {
    return await runCommand({
      ...common(command),
      argv: cgroup ? inCgroup(cgroup.procs, argv) : argv,
      cwd: command.cwd,
      spawnCwd: "/",
      // bubblewrap's own environment is what /proc/1/environ shows inside: nothing.
      env: {},
    });
  } finally {
    cgroup?.remove();
  }
}

function realOrSelf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

async function runSeatbelt(
  command: SandboxedCommand,
  home: string,
  egress: OpenEgress | undefined,
): Promise<CommandResult> {
  const tmp = mkdtempSync(join(tmpdir(), "spar-sandbox-"));
  try {
    const profile = seatbeltProfile({
      workspace: realpathSync(command.workspace),
      tmp: realpathSync(tmp),
      dataDir: realpathSync(home),
      pathDirs: command.path.split(delimiter),
      ...(egress?.proxy.port !== undefined ? { egressPort: egress.proxy.port } : {}),
    });
    const proxy = egress?.proxy.port !== undefined ? `http://127.0.0.1:${egress.proxy.port}` : undefined;
    const proxyEnv: Record<string, string> = proxy
      ? { http_proxy: proxy, https_proxy: proxy, HTTP_PROXY: proxy, HTTPS_PROXY: proxy }
      : {};
    return await runCommand({
      ...common(command),
      argv: ["/usr/bin/sandbox-exec", "-p", profile, ...command.argv],
      cwd: command.cwd,
      env: { ...command.env, ...proxyEnv, PATH: command.path, HOME: tmp, TMPDIR: tmp },
    });
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
