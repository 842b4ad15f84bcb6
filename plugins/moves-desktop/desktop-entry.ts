import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** The folders desktop entries live in, most personal first (XDG Base Directory spec). */
export function applicationDirs(env: Record<string, string | undefined>): string[] {
  const dataHome = env.XDG_DATA_HOME || (env.HOME ? join(env.HOME, ".local", "share") : undefined);
  const dataDirs = (env.XDG_DATA_DIRS || "/usr/local/share:/usr/share").split(":").filter(Boolean);
  return [...(dataHome ? [dataHome] : []), ...dataDirs].map((dir) => join(dir, "applications"));
}

/** The `[Desktop Entry]` group's keys (the first group; localized keys are kept as written). */
export function parseDesktopEntry(text: string): Record<string, string> {
  const keys: Record<string, string> = {};
  let inGroup = false;
  for (const line of text.split(/\r?\n/)) {
    const trimmed = line.trim();
    if (trimmed.startsWith("[")) {
      if (inGroup) break;
      inGroup = trimmed === "[Desktop Entry]";
      continue;
    }
    const eq = trimmed.indexOf("=");
    if (!inGroup || trimmed.startsWith("#") || eq <= 0) continue;
    keys[trimmed.slice(0, eq).trim()] = trimmed.slice(eq + 1).trim();
  }
  return keys;
}

const MOST_ENTRIES = 5000;

/**
 * The application a name means: `<name>.desktop` in the first folder that has it, else the first
 * entry whose Name is the name (case-insensitive). Hidden entries and non-applications do not count.
 */
export function findDesktopEntry(
  name: string,
  dirs: readonly string[],
): { file: string; id: string; title: string } | undefined {
  const wanted = name.toLowerCase();
  const launchable = (file: string) => {
    try {
      const keys = parseDesktopEntry(readFileSync(file, "utf8"));
      if (keys.Type !== "Application" || keys.Hidden === "true" || !keys.Exec) return undefined;
      return keys;
    } catch {
      return undefined;
    }
  };
  const listed = dirs.map((dir) => {
    try {
      return readdirSync(dir)
        .filter((f) => f.endsWith(".desktop"))
        .slice(0, MOST_ENTRIES);
    } catch {
      return [];
    }
  });
  for (const [i, dir] of dirs.entries()) {
    const file = listed[i]?.find((f) => f.toLowerCase() === `${wanted}.desktop`);
    const keys = file ? launchable(join(dir, file)) : undefined;
    if (file && keys) return { file: join(dir, file), id: file.slice(0, -8), title: keys.Name ?? name };
  }
  for (const [i, dir] of dirs.entries()) {
    for (const file of listed[i] ?? []) {
      const keys = launchable(join(dir, file));
      if (keys?.Name?.toLowerCase() === wanted) {
        return { file: join(dir, file), id: file.slice(0, -8), title: keys.Name };
      }
    }
  }
  return undefined;
}
