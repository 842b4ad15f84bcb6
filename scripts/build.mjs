// `npm run build`: compiles into dist.next-<pid>/ (tsc, then the plugin manifests and the
// precompiled schemas), and only once all of that succeeded swaps it in for dist/
// (scripts/swap-dist.mjs). dist/ is never deleted first, so every `spar` command and a running
// daemon keep working while a build runs, and a failed or killed build leaves the last one in place.
import { execFileSync } from "node:child_process";
import { rmSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { removeLeftovers, swapIn } from "./swap-dist.mjs";

const root = join(import.meta.dirname, "..");
const dist = join(root, "dist");
const staging = `${dist}.next-${process.pid}`;
const node = (args) => execFileSync(process.execPath, args, { cwd: root, stdio: "inherit" });

removeLeftovers(dist);
try {
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
  node([tsc, "-p", "tsconfig.build.json", "--outDir", staging]);
  node([join(root, "scripts", "copy-manifests.mjs"), staging]);
  node([join(root, "scripts", "compile-schemas.mjs"), staging]);
  swapIn(staging, dist);
} finally {
  rmSync(staging, { recursive: true, force: true });
}
