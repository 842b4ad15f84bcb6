import { realpathSync, statSync } from "node:fs";
import { isAbsolute, relative, resolve, sep } from "node:path";
import { SparError } from "../../sdk/index.js";

/**
 * The folder a command runs in: the workspace, or `cwd` inside it (relative to it, or absolute), with
 * `..` and symlinks resolved before the check, so neither leads out of the workspace.
 */
export function commandFolder(workspace: string, cwd?: string): string {
  const root = realpathSync(workspace);
  if (cwd === undefined) return root;
  const shown = JSON.stringify(cwd);
  if (!inside(root, resolve(root, cwd))) {
    throw new SparError("FORBIDDEN", `cwd ${shown} is outside your workspace: give a folder inside it`);
  }
  let target: string;
  try {
    target = realpathSync(resolve(root, cwd));
  } catch {
    throw new SparError("NOT_FOUND", `cwd ${shown}: no such folder in your workspace`);
  }
  if (!inside(root, target)) {
    throw new SparError("FORBIDDEN", `cwd ${shown} leads outside your workspace (through a symlink)`);
  }
  if (!statSync(target).isDirectory()) throw new SparError("NOT_FOUND", `cwd ${shown} is not a folder`);
  return target;
}

function inside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel !== ".." && !rel.startsWith(`..${sep}`) && !isAbsolute(rel);
}
