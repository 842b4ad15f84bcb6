/**
 * The bubblewrap command line for one sandboxed process (Linux). What the process sees:
 *
 * - the system read-only: `/usr`, `/etc` (minus every entry that is not world-readable: shadow
 *   files, private TLS keys, SSH host keys), `/bin`, `/sbin` and `/lib*` (as the symlinks they are
 *   on a merged-/usr system), and every folder of the command's PATH;
 * - its workspace read-write, at its real path (so paths in output match what the file moves take),
 *   and nothing else of the data dir: no master.key, spar.db, keys/, plugins/, gorillas/,
 *   config.toml, .env, other fighters' workspaces;
 * - host folders a move lends (`mounts`: the skills' folders at `/skills/<name>`) read-only, never
 *   over the sandbox's own folders or the workspace;
 * - a private `/tmp` and an empty `$HOME`, both in memory (of a bounded size) and gone with the
 *   process; everything else read-only, the folders bubblewrap made for its mounts included;
 * - its own `/proc` in a new PID namespace (no daemon, no other process), a minimal `/dev`;
 * - no network (a network namespace with only its own loopback), unless the egress forwarder is
 *   given: then a proxy port on that loopback leads to the daemon's egress proxy (egress.ts);
 * - new IPC, UTS, user and cgroup namespaces, no capabilities (dropped even when the daemon runs as
 *   root), a session of its own (no terminal to inject keys into), a cleared environment, and death
 *   with the daemon.
 */
import { lstatSync, readdirSync, readlinkSync, statSync } from "node:fs";
import { join } from "node:path";

/** Where the sandbox keeps what the daemon lends it: the egress socket and its forwarder. */
export const RUN_DIR = "/run/spar";
/** The empty home every sandboxed process gets. */
export const SANDBOX_HOME = "/home/fighter";

export interface BwrapPlan {
  bwrap: string;
  /** The program and its arguments, the program's path absolute (limits wrap it: limits.ts). */
  command: readonly string[];
  /** The workspace, real path: the one folder the process may write (besides its private /tmp). */
  workspace: string;
  /** Where the process starts: the workspace or a folder inside it. */
  cwd: string;
  /** The program's environment, besides HOME and TMPDIR which the sandbox sets. */
  env: Record<string, string>;
  /** Folders of the program's PATH: each is mounted read-only when it exists. */
  pathDirs: readonly string[];
  /** More of the host the move needs (the desktop moves: the X socket), read-only unless writable. */
  binds?: readonly { path: string; writable?: boolean }[];
  /** Host folders lent read-only at a path of their own (a skill's folder at `/skills/<name>`). */
  mounts?: readonly { source: string; target: string }[];
  /** The egress proxy's socket and the in-sandbox forwarder, when the process has network. */
  egress?: { socket: string; port: number; node: string; script: string };
  /** Bytes each in-memory folder (/tmp, $HOME) may hold; undefined where bwrap has no --size (<0.8). */
  tmpBytes?: number;
}

/** Top-level folders that are the system, mounted read-only (or recreated as symlinks). */
const SYSTEM = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];

export function bwrapArgs(plan: BwrapPlan): string[] {
  const args: string[] = [];
  const mounted = new Set<string>();
  for (const dir of SYSTEM) systemMount(dir, args, mounted);
  args.push("--ro-bind", "/etc", "/etc");
  for (const hidden of unreadableEtc()) {
    args.push(...(hidden.dir ? ["--tmpfs", hidden.path] : ["--ro-bind", "/dev/null", hidden.path]));
  }
  // The private /tmp before everything bound from the host: what lies under /tmp stays visible.
  // Both are in memory, so each has a size when bwrap can give one.
  const sized = plan.tmpBytes === undefined ? [] : ["--size", String(plan.tmpBytes)];
  args.push(
    ...sized,
    "--tmpfs",
    "/tmp",
    ...sized,
    "--tmpfs",
    SANDBOX_HOME,
    "--proc",
    "/proc",
    "--dev",
    "/dev",
  );
  for (const dir of plan.pathDirs) {
    if (!dir.startsWith("/") || underAny(dir, [...mounted, "/etc"]) || !isDir(dir)) continue;
    args.push("--ro-bind", dir, dir);
    mounted.add(dir);
  }
  args.push("--bind", plan.workspace, plan.workspace);
  for (const bind of plan.binds ?? []) {
    args.push(bind.writable ? "--bind-try" : "--ro-bind-try", bind.path, bind.path);
  }
  for (const mount of plan.mounts ?? []) {
    checkMountTarget(mount.target, plan.workspace);
    // -try: a folder removed since it was listed (a skill uninstalled) is simply not there.
    args.push("--ro-bind-try", mount.source, mount.target);
  }
  const env: Record<string, string> = { ...plan.env, HOME: SANDBOX_HOME, TMPDIR: "/tmp" };
  let command = [...plan.command];
  if (plan.egress) {
    const { socket, port, node, script } = plan.egress;
    args.push("--ro-bind", node, `${RUN_DIR}/node`, "--ro-bind", script, `${RUN_DIR}/egress-forward.mjs`);
    args.push("--bind", socket, `${RUN_DIR}/egress.sock`);
    const proxy = `http://127.0.0.1:${port}`;
    for (const name of ["http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy"])
      env[name] = proxy;
    command = [
      `${RUN_DIR}/node`,
      `${RUN_DIR}/egress-forward.mjs`,
      `${RUN_DIR}/egress.sock`,
      String(port),
      "--",
      ...command,
    ];
  }
  // The root bwrap builds the rest on is itself in memory: read-only once everything is mounted.
  args.push("--remount-ro", "/");
  args.push(
    "--unshare-all",
    "--cap-drop",
    "ALL",
    "--die-with-parent",
    "--new-session",
    "--clearenv",
    "--chdir",
    plan.cwd,
  );
  for (const [name, value] of Object.entries(env)) args.push("--setenv", name, value);
  return [plan.bwrap, ...args, "--", ...command];
}

/** A system folder: a symlink is recreated as the same symlink (merged /usr), a folder bound read-only. */
function systemMount(dir: string, args: string[], mounted: Set<string>): void {
  let stat: ReturnType<typeof lstatSync>;
  try {
    stat = lstatSync(dir);
  } catch {
    return;
  }
  if (stat.isSymbolicLink()) {
    args.push("--symlink", readlinkSync(dir), dir);
  } else if (stat.isDirectory()) {
    args.push("--ro-bind", dir, dir);
    mounted.add(dir);
  }
}

/** Top folders the sandbox makes itself: a mount there could hide or shadow them. */
const OWN = new Set([...SYSTEM, "/etc", "/tmp", "/proc", "/dev", "/home", "/run"]);

/**
 * A mount's target: absolute, without `.`/`..`/empty segments, at least two levels down, and not in
 * a folder the sandbox makes itself nor the workspace's top folder. A plugin's mistake, so it throws.
 */
function checkMountTarget(target: string, workspace: string): void {
  const segments = target.split("/");
  const top = `/${segments[1] ?? ""}`;
  const clean = segments.slice(1).every((s) => s !== "" && s !== "." && s !== "..");
  if (!target.startsWith("/") || !clean || segments.length < 3 || OWN.has(top)) {
    throw new Error(`internal: a sandbox mount may not be at ${JSON.stringify(target)}`);
  }
  if (underAny(workspace, [top]) || underAny(target, [workspace])) {
    throw new Error(`internal: the sandbox mount ${JSON.stringify(target)} overlaps the workspace`);
  }
}

function underAny(path: string, roots: readonly string[]): boolean {
  return roots.some((root) => path === root || path.startsWith(`${root}/`));
}

function isDir(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

let hiddenEtc: { path: string; dir: boolean }[] | undefined;

/**
 * Entries of /etc that are not world-readable (the shadow files, private keys): hidden in the
 * sandbox, where the process may run as the daemon's user, root included. Found once per daemon.
 */
export function unreadableEtc(): readonly { path: string; dir: boolean }[] {
  if (hiddenEtc) return hiddenEtc;
  const found: { path: string; dir: boolean }[] = [];
  const walk = (dir: string, depth: number) => {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return;
    }
    for (const name of names) {
      const path = join(dir, name);
      let stat: ReturnType<typeof lstatSync>;
      try {
        stat = lstatSync(path);
      } catch {
        continue;
      }
      if (stat.isSymbolicLink()) continue;
      const isFolder = stat.isDirectory();
      if ((stat.mode & 0o004) === 0 || (isFolder && (stat.mode & 0o001) === 0)) {
        if (isFolder || stat.isFile()) found.push({ path, dir: isFolder });
      } else if (isFolder && depth < 8) walk(path, depth + 1);
    }
  };
  walk("/etc", 0);
  hiddenEtc = found;
  return found;
}
