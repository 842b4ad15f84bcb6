import type { Stats } from "node:fs";
import { constants, promises as fs } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { homedir } from "node:os";
import { basename, join, resolve } from "node:path";
import { type Capability, isSparError, SparError } from "../../sdk/index.js";
import { commonFolders, expandHome, grantFolders, inside } from "./scopes.js";

/**
 * Path confinement for the file moves. A path is first placed lexically (`..` folded, `~` expanded,
 * nothing else: the bytes are taken as they are, so a look-alike such as U+2024 or a fullwidth
 * solidus is just a character in a name) under one of the allowed roots. It is then opened with
 * Linux's O_PATH, which follows symlinks but opens nothing (no device is touched, no FIFO blocks),
 * and the real path of that fd, read from /proc/self/fd/<fd>, must lie inside an allowed root.
 * Everything after that goes through the verified fd (`/proc/self/fd/<fd>` reopens the same inode;
 * `/proc/self/fd/<dir fd>/<name>` is an openat() on the same folder), so a symlink planted between
 * the check and the use changes nothing: there is no second lookup of the path to race.
 *
 * A hard link is the one way in that no path check sees: a second name, inside a workspace, for a
 * file that lives elsewhere (`<data dir>/keys/cli.key`, `~/.ssh/id_ed25519`), which any process of
 * the daemon's user can make. Where the other names are cannot be found short of walking the whole
 * file system, so a file's content is read or changed in place only when it has one link
 * (`checkSingleLink`); replacing the name (file_write's overwrite) leaves the other names alone.
 */

/** Linux's O_PATH (absent from fs.constants): an fd that names a file without opening it. */
export const O_PATH = 0o10000000;
const { O_DIRECTORY, O_NOFOLLOW } = constants;

export type Access = "read" | "write";

export interface ConfinementOptions {
  /** The fighter's own folder: relative paths start here. */
  workspace: string;
  /** The grants that allow the move: their `scope` folders widen the allowed roots. */
  grants: readonly Capability[];
  /** `[moves.files] allowed_scopes`: a scope is honoured only inside one of these folders. */
  allowedScopes: readonly string[];
  /**
   * The grants of each fighter waiting on the turn (`MoveContext.callers`): a scope folder is a
   * root only as far as every one of them grants it too. The workspace stays: it is the turn's
   * containment, not a grant.
   */
  callerGrants?: readonly (readonly Capability[])[];
  /** The data dir: off limits except its `workspaces/` folder. */
  home: string;
  access: Access;
  /** What `~` means (the user's home). */
  userHome?: string;
}

interface Root {
  /** As configured (after `~`), lexically normalized. */
  given: string;
  /** Where it really is: the path of the opened folder. */
  real: string;
  handle: FileHandle;
}

/** A path placed under a root, before anything is opened. */
export interface Target {
  root: Root;
  /** The names below the root, none of them `.` or `..`. */
  parts: string[];
  /** The path as results show it: relative for the workspace, absolute elsewhere. */
  display: string;
}

/** A file or folder opened with O_PATH and verified to lie inside an allowed root. */
export interface Located extends Target {
  handle: FileHandle;
  stats: Stats;
}

/** A verified folder and a name in it: what a write creates or replaces. */
export interface Slot {
  dir: FileHandle;
  name: string;
  display: string;
}

export const procPath = (fd: number, rest = ""): string => `/proc/self/fd/${fd}${rest ? `/${rest}` : ""}`;

const quoted = (path: string) => JSON.stringify(path);

export class Confinement {
  private constructor(
    private readonly options: Required<ConfinementOptions>,
    private readonly roots: Root[],
    /** Scope folders that do not exist (a path under one is NOT_FOUND, not FORBIDDEN). */
    private readonly missing: string[],
    private readonly dataDir: { given: string; real: string },
    private readonly workspaces: { given: string; real: string },
  ) {}

  /** Opens the allowed roots for one call; `close()` it when the call is done. */
  static async open(options: ConfinementOptions): Promise<Confinement> {
    if (process.platform !== "linux") {
      throw new SparError(
        "FORBIDDEN",
        "the file moves confine paths through Linux's /proc/self/fd, which this system does not have",
      );
    }
    const full = { userHome: homedir(), callerGrants: [], ...options };
    const granted = [full.grants, ...full.callerGrants].map((grants) =>
      grants.flatMap((grant) => grantFolders(grant, full.userHome, full.allowedScopes)),
    );
    const folders = [resolve(full.workspace), ...commonFolders(granted)];
    const roots: Root[] = [];
    const missing: string[] = [];
    try {
      for (const given of new Set(folders)) {
        const handle = await fs.open(given, O_PATH | O_DIRECTORY).catch((err: NodeJS.ErrnoException) => {
          if (err.code === "ENOENT" || err.code === "ENOTDIR") return undefined;
          throw err;
        });
        if (!handle) missing.push(given);
        else roots.push({ given, handle, real: await fs.readlink(procPath(handle.fd)) });
      }
      const dataDir = await realPair(full.home);
      const workspaces = await realPair(join(full.home, "workspaces"));
      checkWorkspace(folders[0] as string, roots[0], workspaces);
      return new Confinement(full, roots, missing, dataDir, workspaces);
    } catch (err) {
      await Promise.all(roots.map((r) => r.handle.close()));
      throw err;
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.roots.map((r) => r.handle.close()));
  }

  /** Places `input` under an allowed root, lexically; refuses what lies outside every one. */
  place(input: string): Target {
    if (input.includes("\0")) throw new SparError("VALIDATION_FAILED", `path ${quoted(input)} contains NUL`);
    const workspace = resolve(this.options.workspace);
    const absolute = resolve(workspace, expandHome(input, this.options.userHome));
    const refusal = this.offLimits(absolute, (p, dir) => inside(p, dir.given) || inside(p, dir.real));
    if (refusal) throw new SparError("FORBIDDEN", `${quoted(input)} ${refusal}`);
    let best: { root: Root; base: string } | undefined;
    for (const root of this.roots) {
      for (const base of [root.given, root.real]) {
        if (inside(absolute, base) && (!best || base.length > best.base.length)) best = { root, base };
      }
    }
    if (!best) {
      if (this.missing.some((m) => inside(absolute, m))) {
        throw new SparError("NOT_FOUND", `${quoted(input)}: the granted folder it lies in does not exist`);
      }
      throw this.outside(input);
    }
    const parts = absolute
      .slice(best.base.length)
      .split("/")
      .filter((p) => p !== "");
    const display = best.root.given === workspace ? parts.join("/") || "." : absolute;
    return { root: best.root, parts, display };
  }

  /** Opens `input` (following symlinks, opening nothing) and checks where it really is. */
  async locate(input: string): Promise<Located> {
    const target = this.place(input);
    let handle: FileHandle;
    try {
      handle = await fs.open(procPath(target.root.handle.fd, target.parts.join("/")), O_PATH);
    } catch (err) {
      throw await this.explainMissing(target, input, err);
    }
    try {
      await this.verify(handle, input);
      return { ...target, handle, stats: await handle.stat() };
    } catch (err) {
      await handle.close();
      throw err;
    }
  }

  /**
   * The verified folder that holds `input`, and its last name. With `create`, missing folders are
   * made one at a time, each inside the one verified before it: a mkdir never runs in an unverified
   * folder, so none is ever created outside.
   */
  async slot(input: string, create: boolean): Promise<Slot> {
    const target = this.place(input);
    const name = target.parts.at(-1);
    if (name === undefined) {
      throw new SparError("VALIDATION_FAILED", `${quoted(input)} is a folder, not a file`);
    }
    let dir = await fs.open(procPath(target.root.handle.fd), O_PATH | O_DIRECTORY);
    try {
      for (const [index, part] of target.parts.slice(0, -1).entries()) {
        const next = await this.enter(dir, part, create).catch(async (err) => {
          throw await this.explainMissing({ ...target, parts: target.parts.slice(0, index + 1) }, input, err);
        });
        await dir.close();
        dir = next;
        await this.verify(dir, input);
      }
      return { dir, name, display: target.display };
    } catch (err) {
      await dir.close();
      throw err;
    }
  }

  /** The entry `name` of a verified folder itself (a symlink is not followed), or undefined. */
  async probe(slot: Slot): Promise<{ handle: FileHandle; stats: Stats } | undefined> {
    const handle = await fs.open(procPath(slot.dir.fd, slot.name), O_PATH | O_NOFOLLOW).catch((err) => {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw fsFailure(err, slot.display);
    });
    if (!handle) return undefined;
    try {
      const stats = await handle.stat();
      if (!stats.isSymbolicLink()) await this.verify(handle, slot.display);
      return { handle, stats };
    } catch (err) {
      await handle.close();
      throw err;
    }
  }

  /**
   * Refuses anything but a regular file: folders (use file_list), symlinks where a write would
   * replace the link, FIFOs, sockets and devices.
   */
  checkFile(stats: Stats, display: string): void {
    if (stats.isDirectory()) {
      throw new SparError("VALIDATION_FAILED", `${quoted(display)} is a folder; use file_list to see it`);
    }
    if (stats.isSymbolicLink()) {
      throw new SparError(
        "FORBIDDEN",
        `${quoted(display)} is a symbolic link; file moves write only regular files, so name the file it points to`,
      );
    }
    if (!stats.isFile()) {
      throw new SparError("FORBIDDEN", `${quoted(display)} is ${kindOf(stats)}, not a regular file`);
    }
  }

  /**
   * Refuses a file with more than one hard link before its content is read or changed in place
   * (file_read, file_edit, an append): its other names may be a key this fighter may not read, and
   * nothing says where they are. Replacing the name (file_write's overwrite) is still allowed.
   */
  checkSingleLink(stats: Stats, display: string): void {
    if (stats.nlink <= 1) return;
    throw new SparError(
      "FORBIDDEN",
      `${quoted(display)} has ${stats.nlink} hard links: its other names may be files this fighter may not see ` +
        "(a key elsewhere), so file moves read or change in place only files with one link; " +
        'file_write with mode "overwrite" replaces this name with a file of its own',
    );
  }

  /** Opens the very file a verified O_PATH fd names, for reading or writing. */
  async reopen(located: { handle: FileHandle; stats: Stats }, flags: number): Promise<FileHandle> {
    const file = await fs.open(
      procPath(located.handle.fd),
      flags | constants.O_NONBLOCK | constants.O_NOCTTY,
    );
    const now = await file.stat();
    if (now.dev !== located.stats.dev || now.ino !== located.stats.ino) {
      await file.close();
      throw new SparError("CONFLICT", "the file changed while it was being opened; try again");
    }
    return file;
  }

  /** Throws FORBIDDEN unless the fd's real path lies inside an allowed root (and not in the data dir). */
  async verify(handle: FileHandle, input: string): Promise<void> {
    const real = await fs.readlink(procPath(handle.fd));
    if (!this.allowed(real)) {
      const refusal = real.startsWith("/")
        ? this.offLimits(real, (p, dir) => inside(p, dir.real))
        : undefined;
      if (refusal) throw new SparError("FORBIDDEN", `${quoted(input)} ${refusal}`);
      throw new SparError(
        "FORBIDDEN",
        `${quoted(input)} leads outside the folders this fighter may ${this.options.access} (through a symbolic link or a moved folder)`,
      );
    }
  }

  /** True when a real path (from /proc/self/fd) lies inside an allowed root and not in the data dir. */
  allowed(real: string): boolean {
    // Pipes and sockets read as "pipe:[…]"; a deleted file or a memfd (reached through /dev/fd/N,
    // the daemon's own open files) as "… (deleted)" or "/memfd:…": none is a file in a folder.
    if (!real.startsWith("/") || real.startsWith("/memfd:") || real.endsWith(" (deleted)")) return false;
    if (this.offLimits(real, (p, dir) => inside(p, dir.real))) return false;
    return this.roots.some((root) => inside(real, root.real));
  }

  /**
   * Why a path is off limits whatever the grants say, or undefined: the data dir outside its
   * workspaces/ (master.key, config.toml, the database, plugins/), and /proc (the daemon's own
   * environment, with its provider keys, is /proc/self/environ).
   */
  private offLimits(
    path: string,
    under: (path: string, dir: { given: string; real: string }) => boolean,
  ): string | undefined {
    if (inside(path, "/proc")) {
      return "is under /proc, which file moves never touch (it holds the daemon's own environment)";
    }
    if (under(path, this.dataDir) && !under(path, this.workspaces)) {
      return "is inside Spar's data folder, which file moves never touch (only the workspaces in it)";
    }
    return undefined;
  }

  /** Opens one folder below a verified one, making it first when asked to. */
  private async enter(dir: FileHandle, name: string, create: boolean): Promise<FileHandle> {
    const open = () => fs.open(procPath(dir.fd, name), O_PATH | O_DIRECTORY);
    try {
      return await open();
    } catch (err) {
      if (!create || (err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    }
    // mkdir never follows a final symlink: a dangling link here is EEXIST, and open() then fails.
    await fs.mkdir(procPath(dir.fd, name)).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== "EEXIST") throw err;
    });
    return open();
  }

  /**
   * Why opening failed. A missing name below a symlink that leads outside is FORBIDDEN, not
   * NOT_FOUND, so the answer never tells whether something exists outside the allowed roots.
   */
  private async explainMissing(target: Target, input: string, err: unknown): Promise<SparError> {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== "ENOENT" && code !== "ENOTDIR" && code !== "EACCES" && code !== "ELOOP") {
      return fsFailure(err, input);
    }
    for (let depth = target.parts.length - 1; depth >= 0; depth--) {
      const path = procPath(target.root.handle.fd, target.parts.slice(0, depth).join("/"));
      const ancestor = await fs.open(path, O_PATH).catch(() => undefined);
      if (!ancestor) continue;
      try {
        await this.verify(ancestor, input);
      } catch (refusal) {
        return refusal as SparError;
      } finally {
        await ancestor.close();
      }
      break;
    }
    return fsFailure(err, input);
  }

  private outside(input: string): SparError {
    const scope = this.roots.filter((r) => r.given !== resolve(this.options.workspace)).map((r) => r.given);
    const where = scope.length > 0 ? `its workspace and ${scope.join(", ")}` : "its workspace";
    return new SparError(
      "FORBIDDEN",
      `${quoted(input)} is outside the folders this fighter may ${this.options.access} (${where})`,
    );
  }
}

/**
 * The workspace must really be the folder `<data dir>/workspaces/<name>`: had something (a shell
 * move, say) replaced it with a symlink to `/`, the root every relative path starts from would be
 * wherever that link points.
 */
function checkWorkspace(
  given: string,
  root: Root | undefined,
  workspaces: { given: string; real: string },
): void {
  if (!inside(given, workspaces.given) || given === workspaces.given) return;
  if (root?.given !== given) throw new SparError("NOT_FOUND", "the fighter's workspace does not exist");
  if (root.real !== join(workspaces.real, basename(given))) {
    throw new SparError(
      "FORBIDDEN",
      "the fighter's workspace is not a plain folder in the data dir's workspaces/ (a symbolic link was put in its place?); file moves refuse to run until it is",
    );
  }
}

/** A folder as given and as it really is (the given path again when it does not exist). */
async function realPair(path: string): Promise<{ given: string; real: string }> {
  const given = resolve(path);
  return { given, real: await fs.realpath(given).catch(() => given) };
}

function kindOf(stats: Stats): string {
  if (stats.isFIFO()) return "a named pipe (FIFO)";
  if (stats.isSocket()) return "a socket";
  if (stats.isCharacterDevice() || stats.isBlockDevice()) return "a device";
  return "not a regular file";
}

/** A file system error as a coded SparError that names the path as the model gave it, never /proc. */
export function fsFailure(err: unknown, display: string): SparError {
  if (isSparError(err)) return err;
  const code = (err as NodeJS.ErrnoException).code;
  const path = quoted(display);
  switch (code) {
    case "ENOENT":
      return new SparError("NOT_FOUND", `${path} does not exist`);
    case "EEXIST":
      return new SparError("CONFLICT", `${path} already exists`);
    case "ENOTDIR":
      return new SparError("VALIDATION_FAILED", `a part of ${path} is a file, not a folder`);
    case "EISDIR":
      return new SparError("VALIDATION_FAILED", `${path} is a folder`);
    case "ELOOP":
      return new SparError("FORBIDDEN", `${path} goes through too many symbolic links`);
    case "EACCES":
    case "EPERM":
    case "EROFS":
      return new SparError("FORBIDDEN", `${path}: the system does not allow it (${code})`);
    case "ENAMETOOLONG":
      return new SparError("VALIDATION_FAILED", `${path}: a name in it is too long`);
    case "ENXIO":
      return new SparError("FORBIDDEN", `${path} is not a regular file`);
    case "ENOSPC":
    case "EDQUOT":
      return new SparError("PAYLOAD_TOO_LARGE", `${path}: no space left on the disk (${code})`);
    default:
      return new SparError("INTERNAL", `${path}: ${code ?? (err as Error).message}`);
  }
}
