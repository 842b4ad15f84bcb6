import { existsSync, readFileSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { SparError } from "./errors.js";

/** The data dir: `$SPAR_HOME`, else `~/.spar`. */
export function resolveHome(env = process.env): string {
  return env.SPAR_HOME ? resolve(env.SPAR_HOME) : join(homedir(), ".spar");
}

export const MASTER_KEY_FILE = "master.key";

/**
 * Parses `.env` text: `NAME=value` lines, `#` comments, optional `export `, single or double quotes.
 * Returns the pairs; nothing is written to the environment here.
 */
export function parseDotEnv(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const rawLine of text.split(/\r?\n/)) {
    const line = rawLine.trim();
    if (!line || line.startsWith("#")) continue;
    const match = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line);
    if (!match) continue;
    const [, name, rest = ""] = match;
    let value = rest.trim();
    const quote = value[0];
    if ((quote === '"' || quote === "'") && value.endsWith(quote) && value.length >= 2) {
      value = value.slice(1, -1);
      if (quote === '"') value = value.replace(/\\n/g, "\n").replace(/\\"/g, '"');
    } else {
      value = value.replace(/\s+#.*$/, "");
    }
    if (name) out[name] = value;
  }
  return out;
}

/** Loads `<home>/.env` into `env` without overriding variables that are already set. */
export function loadDotEnv(home: string, env: NodeJS.ProcessEnv = process.env): void {
  const path = join(home, ".env");
  if (!existsSync(path)) return;
  for (const [name, value] of Object.entries(parseDotEnv(readFileSync(path, "utf8")))) {
    if (env[name] === undefined) env[name] = value;
  }
}

/**
 * The master secret the store key is derived from: `SPAR_MASTER_KEY`, else `<home>/master.key`.
 * The caller owns the returned buffer and must zeroize it (`fill(0)`) once the key is derived.
 */
export function readMasterSecret(home: string, env = process.env): Buffer {
  const fromEnv = env.SPAR_MASTER_KEY;
  if (fromEnv) return Buffer.from(fromEnv, "utf8");
  const path = join(home, MASTER_KEY_FILE);
  if (!existsSync(path)) {
    throw new SparError(
      "STORE_KEY_INVALID",
      `no master key: ${path} is missing and SPAR_MASTER_KEY is not set. Run "spar init", or restore the key file`,
    );
  }
  if (process.platform !== "win32" && (statSync(path).mode & 0o077) !== 0) {
    throw new SparError("STORE_KEY_INVALID", `${path} is readable by other users; run: chmod 600 ${path}`);
  }
  return readFileSync(path);
}
