import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** The names the installed set's lock file lists: only those folders of `<data dir>/skills/` are skills. */
export function installedNames(home: string): Set<string> {
  const file = join(home, "skills", "skills.lock.json");
  if (!existsSync(file)) return new Set();
  try {
    const lock = JSON.parse(readFileSync(file, "utf8")) as { skills?: Record<string, unknown> };
    return new Set(Object.keys(lock.skills ?? {}));
  } catch {
    return new Set();
  }
}
