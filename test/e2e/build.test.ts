/**
 * `npm run build` compiles into a folder of its own and swaps it in for dist/ when it is complete
 * (scripts/build.mjs, scripts/swap-dist.mjs), so `spar` keeps working while a build runs.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { removeLeftovers, swapIn } from "../../scripts/swap-dist.mjs";
import { cleanEnv, removeHome, tempHome } from "../helpers/daemon.js";

const REPO = resolve(import.meta.dirname, "..", "..");

const cleanup: (() => void)[] = [];
afterEach(() => {
  for (const step of cleanup.splice(0).reverse()) step();
});

function scratch(): string {
  const dir = tempHome();
  cleanup.push(() => removeHome(dir));
  return dir;
}

/** A copy of what `npm run build` reads and writes, with the current build as its dist/. */
function copyOfRepo(): string {
  const root = join(scratch(), "spar");
  for (const part of ["kernel", "sdk", "lib", "plugins", "cli", "bin", "scripts", "dist"]) {
    cpSync(join(REPO, part), join(root, part), { recursive: true });
  }
  for (const file of ["package.json", "tsconfig.json", "tsconfig.build.json", "plugin.schema.json"]) {
    cpSync(join(REPO, file), join(root, file));
  }
  symlinkSync(join(REPO, "node_modules"), join(root, "node_modules"));
  return root;
}

/** Processes whose arguments include each of `args` and whose working directory is `cwd`. */
function processesIn(cwd: string, args: string[]): number[] {
  const found: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const argv = readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0");
      if (args.every((a) => argv.includes(a)) && readlinkSync(`/proc/${name}/cwd`) === cwd) {
        found.push(Number(name));
      }
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

/** The copy's own `spar` binary. */
function sparIn(root: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [join(root, "bin", "spar.js"), ...args],
      { env: { ...cleanEnv(), SPAR_HOME: join(root, "..", "home") }, timeout: 60_000 },
      (err, stdout, stderr) =>
        done({ code: err ? (typeof err.code === "number" ? err.code : 1) : 0, stdout, stderr }),
    );
  });
}

describe("npm run build", () => {
  it("leaves dist/ whole while tsc compiles: spar keeps working, and a killed build changes nothing", async () => {
    const root = copyOfRepo();
    const version = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).version as string;
    const build: ChildProcess = spawn("npm", ["run", "build"], {
      cwd: root,
      detached: true,
      stdio: "ignore",
    });
    const stop = () => {
      try {
        process.kill(-(build.pid as number), "SIGKILL");
      } catch {
        // Already ended.
      }
    };
    cleanup.push(stop);
    // tsc is running: the build is under way (before this fix, dist/ was deleted first).
    while (processesIn(root, ["-p", "tsconfig.build.json"]).length === 0) {
      if (build.exitCode !== null) throw new Error(`npm run build ended (${build.exitCode}) before tsc ran`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const during = await sparIn(root, ["--version"]);
    expect(during.stderr).toBe("");
    expect(during.stdout).toMatch(new RegExp(`^spar ${version.replaceAll(".", "\\.")} `));
    const plugins = await sparIn(root, ["plugin", "list", "--json"]);
    expect(plugins.code, plugins.stderr).toBe(0);
    expect(JSON.parse(plugins.stdout).plugins.map((p: { id: string }) => p.id)).toContain("arena-http");

    // Killed half way: the last build is still there, whole.
    stop();
    await new Promise((resolve) =>
      build.exitCode !== null || build.signalCode !== null ? resolve(undefined) : build.once("exit", resolve),
    );
    expect((await sparIn(root, ["--version"])).code).toBe(0);
  });

  it("swaps a finished build in for the old one, and clears what a killed build left", () => {
    const dir = scratch();
    const dist = join(dir, "dist");
    const write = (folder: string, text: string) => {
      mkdirSync(join(folder, "cli"), { recursive: true });
      writeFileSync(join(folder, "cli", "index.js"), text);
    };
    write(dist, "old");
    write(join(dir, "dist.next-999999999"), "left by a killed build");
    write(join(dir, "dist.old-999999999"), "left by a killed swap");
    removeLeftovers(dist);
    expect(readdirSync(dir).sort()).toEqual(["dist"]);

    write(join(dir, "build"), "new");
    swapIn(join(dir, "build"), dist);
    expect(readFileSync(join(dist, "cli", "index.js"), "utf8")).toBe("new");
    expect(readdirSync(dir)).toEqual(["dist"]);

    // Nothing finished to swap in: dist/ stays as it is.
    expect(() => swapIn(join(dir, "missing"), dist)).toThrow(/does not exist/);
    expect(existsSync(join(dist, "cli", "index.js"))).toBe(true);
  });
});
