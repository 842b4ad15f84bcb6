/**
 * What the policy and a request need to know about a call that only the disk can say: its main
 * argument (what a rule's pattern reads), whether a file move's target lies outside the workspace
 * and exists, and the files the call would execute or overwrite, each with its sha256, which the
 * approval binds: if one changes before the call runs, the approval no longer holds.
 */
import { createHash } from "node:crypto";
import { createReadStream, lstatSync, realpathSync, type Stats } from "node:fs";
import { homedir } from "node:os";
import { isAbsolute, relative, resolve, sep } from "node:path";
import { canonicalJson } from "../../sdk/index.js";

/** The most files one call binds: a command line naming more binds the first ones. */
const MAX_BOUND_FILES = 32;

export interface BoundFile {
  path: string;
  sha256: string;
}

const text = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);

/** What `shell_exec` runs: `argv`, or `command` as `/bin/sh -c <command>` (as the move runs it). */
export function shellArgv(args: Record<string, unknown>): string[] {
  if (Array.isArray(args.argv)) return args.argv.map(String);
  const command = text(args.command);
  return command === undefined ? [] : ["/bin/sh", "-c", command];
}

/**
 * The call's main argument, as a rule's `pattern` is matched against it: the command line of
 * `shell_exec` (`/bin/sh -c …` for `command`), a file move's path, `channel_notify`'s
 * `<platform>:<chat>`, the fighter spawned or messaged, a schedule's message, a fetched URL, a
 * search's query; for any other move, its canonical arguments.
 *
 * @example
 * subjectOf("shell_exec", { argv: ["git", "status"] }); // "git status"
 */
export function subjectOf(move: string, args: Record<string, unknown>): string {
  switch (move) {
    case "shell_exec":
      return shellArgv(args).join(" ");
    case "file_read":
    case "file_write":
    case "file_edit":
    case "file_list":
      return text(args.path) ?? ".";
    case "channel_notify":
      return notifyTarget(args) ?? `${text(args.platform) ?? "*"}:notify_chat`;
    case "fighter_spawn":
      return text(args.name) ?? "";
    case "fighter_message":
      return text(args.to) ?? "";
    case "schedule_add":
      return text(args.message) ?? "";
    case "web_fetch":
      return text(args.url) ?? "";
    case "web_search":
      return text(args.query) ?? "";
    default:
      return canonicalJson(args);
  }
}

/** `channel_notify`'s chat when it names one (`<platform or *>:<chat>`); none: the channel's notify_chat. */
export function notifyTarget(args: Record<string, unknown>): string | undefined {
  const chat = text(args.chat);
  return chat === undefined ? undefined : `${text(args.platform) ?? "*"}:${chat}`;
}

function inside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}

function realOrSelf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

function statOf(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
}

/** A file move's path as the move reads it: `~` is the user's home, a relative path is in the workspace. */
export function filePath(workspace: string, path: string): string {
  const expanded = path === "~" ? homedir() : path.startsWith("~/") ? `${homedir()}${path.slice(1)}` : path;
  return resolve(realOrSelf(workspace), expanded);
}

/** A file move's target: outside the workspace (its real path, when it exists), and whether it exists. */
export function fileTarget(
  workspace: string,
  path: string,
): { path: string; outside: boolean; exists: boolean } {
  const target = filePath(workspace, path);
  const exists = statOf(target) !== undefined;
  return {
    path: target,
    outside: !inside(realOrSelf(workspace), exists ? realOrSelf(target) : target),
    exists,
  };
}

/** The folder `shell_exec` runs in: `cwd` in the workspace, or the workspace. */
export function shellFolder(workspace: string, args: Record<string, unknown>): string {
  const root = realOrSelf(workspace);
  const cwd = text(args.cwd);
  return cwd === undefined ? root : realOrSelf(resolve(root, cwd));
}

/** Words of a `/bin/sh -c` line that could name a file: split at blanks, quotes and operators. */
function lineWords(line: string): string[] {
  return line.split(/[\s"'`;|&()<>]+/).filter(Boolean);
}

/** A host folder a sandboxed command sees at `target` (`move.mounts`: a skill's folder at `/skills/<name>`). */
export interface LentFolder {
  source: string;
  target: string;
}

/** A command's word naming a file under a lent folder, as the host has it (never outside the folder). */
function lentPath(word: string, mounts: readonly LentFolder[]): string | undefined {
  const mount = mounts.find((m) => word.startsWith(`${m.target}/`));
  if (!mount) return undefined;
  const path = resolve(mount.source, word.slice(mount.target.length + 1));
  return inside(mount.source, path) ? path : undefined;
}

/**
 * The paths a call would execute or overwrite, before hashing: the ones that exist as regular files.
 * A command's words under a folder lent to its sandbox (`mounts`: a skill's script) count too.
 */
export function boundPaths(
  move: string,
  args: Record<string, unknown>,
  workspace: string,
  mounts: readonly LentFolder[] = [],
): string[] {
  const candidates: string[] = [];
  let base = realOrSelf(workspace);
  if (move === "shell_exec") {
    base = shellFolder(workspace, args);
    const argv = shellArgv(args);
    const command = text(args.command);
    // argv's words as given, and as a `-c` line's words (["/bin/sh", "-c", "sh run.sh"]).
    const words = command !== undefined ? lineWords(command) : [...argv, ...argv.flatMap(lineWords)];
    // The program, then every argument that is a file under the folder it runs in (a script, a Makefile's target).
    for (const word of words) {
      if (word.startsWith("-") || word.includes("\0")) continue;
      const lent = lentPath(word, mounts);
      if (lent) candidates.push(lent);
      const path = resolve(base, word);
      if (inside(base, path)) candidates.push(path);
    }
  } else if ((move === "file_write" || move === "file_edit") && typeof args.path === "string") {
    candidates.push(filePath(workspace, args.path));
  }
  const files = [...new Set(candidates)].filter((path) => statOf(path)?.isFile() === true);
  return files.slice(0, MAX_BOUND_FILES);
}

function sha256Of(path: string): Promise<string | undefined> {
  return new Promise((done) => {
    const hash = createHash("sha256");
    createReadStream(path)
      .on("data", (chunk) => hash.update(chunk))
      .on("end", () => done(hash.digest("hex")))
      .on("error", () => done(undefined));
  });
}

/** The files the call would execute or overwrite, with their sha256: what an approval binds. */
export async function boundFiles(
  move: string,
  args: Record<string, unknown>,
  workspace: string,
  mounts: readonly LentFolder[] = [],
): Promise<BoundFile[]> {
  const files: BoundFile[] = [];
  for (const path of boundPaths(move, args, workspace, mounts)) {
    const sha256 = await sha256Of(path);
    if (sha256) files.push({ path, sha256 });
  }
  return files;
}

/** Why `now` no longer is the call that was approved, or undefined when it still is. */
export function changedSince(approved: readonly BoundFile[], now: readonly BoundFile[]): string | undefined {
  const before = new Map(approved.map((f) => [f.path, f.sha256]));
  const after = new Map(now.map((f) => [f.path, f.sha256]));
  for (const [path, sha256] of before) {
    if (!after.has(path)) return `the file ${path} is gone since it was approved`;
    if (after.get(path) !== sha256) return `the file ${path} changed since it was approved`;
  }
  for (const path of after.keys())
    if (!before.has(path)) return `the file ${path} appeared since it was approved`;
  return undefined;
}
