// tsc compiles each plugin's index.ts to dist/plugins/<id>/; its manifest must sit beside the code,
// because a manifest's `entry` is resolved relative to the folder that holds plugin.json.
import { copyFileSync, existsSync, readdirSync } from "node:fs";
import { join } from "node:path";

for (const id of readdirSync("plugins")) {
  const manifest = join("plugins", id, "plugin.json");
  if (existsSync(manifest) && existsSync(join("dist", "plugins", id))) {
    copyFileSync(manifest, join("dist", "plugins", id, "plugin.json"));
  }
}
