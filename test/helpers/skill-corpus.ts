/**
 * For the skill scanner's corpus tests: skill folders read the way the installer hands them to the
 * scanner, and the moves the plugins contribute (name → capability), as install-routes passes them.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";

export const ROOT = join(import.meta.dirname, "..", "..");

/** Every move a bundled plugin's manifest contributes: name → its capability type. */
export function knownMoves(): Map<string, string> {
  const moves = new Map<string, string>();
  for (const plugin of readdirSync(join(ROOT, "plugins"))) {
    const manifest = join(ROOT, "plugins", plugin, "plugin.json");
    if (!existsSync(manifest)) continue;
    const json = JSON.parse(readFileSync(manifest, "utf8")) as {
      contributes?: { moves?: Array<{ name: string; capability: string }> };
    };
    for (const move of json.contributes?.moves ?? []) moves.set(move.name, move.capability);
  }
  return moves;
}

/** A skill folder's files: the path relative to the folder (`/`-separated) → its bytes. */
export function readFolder(dir: string): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  const walk = (at: string) => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      const path = join(at, entry.name);
      if (entry.isDirectory()) walk(path);
      else files.set(relative(dir, path).split("\\").join("/"), readFileSync(path));
    }
  };
  walk(dir);
  return files;
}

/** The folders in `dir`, sorted; none when it does not exist. */
export const folders = (dir: string): string[] =>
  existsSync(dir)
    ? readdirSync(dir)
        .filter((name) => statSync(join(dir, name)).isDirectory())
        .sort()
    : [];
