// tsc compiles each plugin's index.ts to dist/plugins/<id>/; its manifest must sit beside the code,
// because a manifest's `entry` is resolved relative to the folder that holds plugin.json. A plugin
// without code (a skill pack) gets a folder of its own for its manifest.
//
// A plugin's `public/` folder (files it serves, like the dashboard) is copied to
// dist/plugins/<id>/public/ as it is: the browser loads those files, so nothing compiles them. Its
// `vendor.json` maps a file in public/ to a file of an installed package or the repository
// (`"vendor/x.js": "node_modules/pkg/x.js"`), copied in at build time so the page needs no CDN and no
// build step when the daemon runs.
import { copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

// The build being made: dist/, or the folder scripts/build.mjs compiles into before it swaps it in.
const dist = process.argv[2] ?? "dist";

for (const id of readdirSync("plugins")) {
  const manifest = join("plugins", id, "plugin.json");
  if (!existsSync(manifest)) continue;
  const out = join(dist, "plugins", id);
  if (!existsSync(out) && existsSync(join("plugins", id, "index.ts"))) continue;
  mkdirSync(out, { recursive: true });
  copyFileSync(manifest, join(out, "plugin.json"));
  copyPublic(id, out);
}

function copyPublic(id, out) {
  const source = join("plugins", id, "public");
  if (!existsSync(source)) return;
  const target = join(out, "public");
  rmSync(target, { recursive: true, force: true });
  cpSync(source, target, { recursive: true });
  const vendorFile = join("plugins", id, "vendor.json");
  if (!existsSync(vendorFile)) return;
  const vendor = JSON.parse(readFileSync(vendorFile, "utf8"));
  for (const [to, from] of Object.entries(vendor)) {
    const destination = resolve(target, to);
    if (relative(resolve(target), destination).startsWith("..")) {
      throw new Error(`${vendorFile}: "${to}" is outside public/`);
    }
    if (!existsSync(from)) {
      throw new Error(`${vendorFile}: ${from} is missing; install the dependencies (npm ci) first`);
    }
    mkdirSync(dirname(destination), { recursive: true });
    copyFileSync(from, destination);
  }
}
