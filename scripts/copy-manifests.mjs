// tsc compiles each plugin's index.ts to dist/plugins/<id>/; its manifest must sit beside the code,
// because a manifest's `entry` is resolved relative to the folder that holds plugin.json. A plugin
// without code (a skill pack) gets a folder of its own for its manifest.
import { copyFileSync, existsSync, mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";

for (const id of readdirSync("plugins")) {
  const manifest = join("plugins", id, "plugin.json");
  if (!existsSync(manifest)) continue;
  const out = join("dist", "plugins", id);
  if (!existsSync(out) && existsSync(join("plugins", id, "index.ts"))) continue;
  mkdirSync(out, { recursive: true });
  copyFileSync(manifest, join(out, "plugin.json"));
}
