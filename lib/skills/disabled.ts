import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * Bundled skills the user switched off (`spar move remove <bundled name>`; `spar move install <name>`
 * switches one on again), in `<data dir>/skills/disabled.json`, replaced whole on every change.
 */
const fileOf = (home: string) => join(home, "skills", "disabled.json");

/** The bundled skills switched off, by name; none when the file is missing or unreadable. */
export function disabledNames(home: string): Set<string> {
  const file = fileOf(home);
  if (!existsSync(file)) return new Set();
  try {
    const names = (JSON.parse(readFileSync(file, "utf8")) as { disabled?: unknown }).disabled;
    return new Set(Array.isArray(names) ? names.filter((n): n is string => typeof n === "string") : []);
  } catch {
    return new Set();
  }
}

/** Switches a bundled skill on or off; whether that changed anything. */
export function bundledSwitch(home: string, name: string, enabled: boolean): boolean {
  const names = disabledNames(home);
  if (names.has(name) !== enabled) return false;
  if (enabled) names.delete(name);
  else names.add(name);
  mkdirSync(join(home, "skills"), { recursive: true, mode: 0o700 });
  const file = fileOf(home);
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, `${JSON.stringify({ disabled: [...names].sort() }, null, 2)}\n`, {
    mode: 0o600,
    flush: true,
  });
  renameSync(temp, file);
  return true;
}
