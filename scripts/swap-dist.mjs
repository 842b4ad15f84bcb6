// Puts a finished build in place of dist/. `npm run build` compiles into a folder of its own
// (scripts/build.mjs) and calls this only once that folder is complete, so dist/ is never half
// built: the CLI and a running daemon keep loading a whole build while tsc works. The swap is two
// renames (dist/ aside, the new build in), the closest Node comes to an atomic exchange of two
// folders: dist/ is missing only between them, for microseconds. The old build is deleted after.
//
//   node scripts/swap-dist.mjs <finished build folder> [<target, default dist>]
import { existsSync, readdirSync, renameSync, rmSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** Moves `staging` to `target`, replacing what was there, and deletes the old build. */
export function swapIn(staging, target) {
  if (!existsSync(staging)) throw new Error(`${staging} does not exist: nothing to swap in`);
  const old = `${target}.old-${process.pid}`;
  const had = existsSync(target);
  if (had) renameSync(target, old);
  try {
    renameSync(staging, target);
  } catch (err) {
    // The new build could not go in: the old one goes back.
    if (had) renameSync(old, target);
    throw err;
  }
  if (had) rmSync(old, { recursive: true, force: true });
}

/**
 * Removes what builds that were killed left beside `target` (`<target>.next-<pid>`,
 * `<target>.old-<pid>`), unless the build that made it still runs.
 */
export function removeLeftovers(target) {
  const name = basename(target);
  for (const entry of readdirSync(dirname(target))) {
    const pid = new RegExp(`^${name}\\.(?:next|old)-(\\d+)$`).exec(entry)?.[1];
    if (pid && (Number(pid) === process.pid || !running(Number(pid)))) {
      rmSync(join(dirname(target), entry), { recursive: true, force: true });
    }
  }
}

function running(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === "EPERM";
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [staging, target = "dist"] = process.argv.slice(2);
  if (!staging) throw new Error("usage: node scripts/swap-dist.mjs <finished build folder> [<target>]");
  swapIn(resolve(staging), resolve(target));
}
