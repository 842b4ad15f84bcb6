/**
 * The two files `spar channel` edits in the data dir: config.toml, one table at a time
 * (`[channels.<platform>]`, `[tunnel]`), and `.env`, one variable at a time (the secrets). Every
 * other table, variable and comment is kept as written. A table is replaced in the text where it
 * stands, and the result parsed back to make sure it says exactly what was meant; a file where that
 * cannot be done (the table written as dotted keys or inline) is rewritten from its parsed form, its
 * leading comments kept. The new config is then checked as the daemon checks it, and put back as it
 * was if the check fails, so `spar channel` never leaves a config the daemon would refuse.
 */
import { chmodSync, existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { isDeepStrictEqual } from "node:util";
import { parse, stringify } from "smol-toml";
import { loadConfig } from "../../kernel/host/config.js";
import { loadSparConfig } from "../../kernel/host/config-sections.js";
import { discoverPlugins, pluginRoots } from "../../kernel/host/plugin-manifest.js";
import { parseDotEnv } from "../../lib/home.js";
import { SparError } from "../../sdk/errors.js";
import { formatSchemaErrors, validatorWithDefaults } from "../../sdk/schema.js";
import { KERNEL_VERSION } from "../../sdk/version.js";

type Table = Record<string, unknown>;

const configPath = (home: string) => join(home, "config.toml");
const envPath = (home: string) => join(home, ".env");

/** config.toml as parsed (empty when there is none). */
export function readConfig(home: string): Table {
  const path = configPath(home);
  return existsSync(path) ? (parse(readFileSync(path, "utf8")) as Table) : {};
}

/** The table at `path` (`channels.telegram`, `tunnel`), or undefined. */
export function tableAt(config: Table, path: string): Table | undefined {
  let node: unknown = config;
  for (const key of path.split(".")) {
    if (typeof node !== "object" || node === null) return undefined;
    node = (node as Table)[key];
  }
  return typeof node === "object" && node !== null && !Array.isArray(node) ? (node as Table) : undefined;
}

/**
 * `table` checked against the schema of the plugin that owns `path`, as the daemon will check it,
 * and completed with its defaults (the webhook's `path`, the API root). Nothing is written.
 */
export function checkTable(home: string, path: string, table: Table): Table {
  const plugins = discoverPlugins(pluginRoots(home, loadConfig(home).plugins.dirs), KERNEL_VERSION);
  const owner = plugins.find((p) => p.manifest.sections?.[path]);
  const schema = owner?.manifest.sections?.[path];
  if (!schema) {
    throw new SparError(
      "PLUGIN_INVALID",
      `no installed plugin owns [${path}]: is its plugin disabled or missing?`,
    );
  }
  const checked = structuredClone(table);
  const validate = validatorWithDefaults(schema);
  if (!validate(checked)) {
    throw new SparError("VALIDATION_FAILED", formatSchemaErrors(validate.errors, path), { path });
  }
  return checked;
}

/**
 * Sets the tables at the given paths in config.toml (undefined removes one), keeping everything
 * else, then checks the config as the daemon would; on failure the old file is put back and the
 * daemon's error thrown.
 */
export function writeTables(home: string, tables: Record<string, Table | undefined>): void {
  const path = configPath(home);
  const before = existsSync(path) ? readFileSync(path, "utf8") : "";
  let text = before;
  const wanted = parse(before) as Table;
  for (const [table, value] of Object.entries(tables)) {
    setAt(wanted, table, value);
    text = replaceTable(text, table, value);
  }
  if (!parsesTo(text, wanted)) text = leadingComments(before) + stringify(wanted);
  writeAtomically(path, text, 0o600);
  try {
    loadSparConfig(home);
  } catch (err) {
    writeAtomically(path, before, 0o600);
    throw err;
  }
}

function setAt(config: Table, path: string, value: Table | undefined): void {
  const keys = path.split(".");
  const last = keys.pop() as string;
  let node = config;
  for (const key of keys) {
    if (typeof node[key] !== "object" || node[key] === null) {
      if (value === undefined) return;
      node[key] = {};
    }
    node = node[key] as Table;
  }
  if (value === undefined) delete node[last];
  else node[last] = value;
}

/** Whether `text` is TOML saying exactly `data` (dates and prototypes aside). */
function parsesTo(text: string, data: Table): boolean {
  try {
    return isDeepStrictEqual(JSON.parse(JSON.stringify(parse(text))), JSON.parse(JSON.stringify(data)));
  } catch {
    return false;
  }
}

/**
 * `text` with the `[path]` table's section replaced by `value` (removed when undefined; appended
 * when it was not there). A section runs from the comments just above its header to the next
 * header; comments and blank lines just before the next header belong to that one.
 */
function replaceTable(text: string, path: string, value: Table | undefined): string {
  const lines = text.split("\n");
  const header = new RegExp(`^\\s*\\[\\s*${path.split(".").join("\\s*\\.\\s*")}\\s*\\]\\s*(#.*)?$`);
  const start = lines.findIndex((line) => header.test(line));
  const section = value === undefined ? "" : stringify(nest(path, value)).trim();
  if (start < 0) return `${[text.trim(), section].filter(Boolean).join("\n\n")}\n`;
  let lead = start;
  while (lead > 0 && /^\s*#/.test(lines[lead - 1] ?? "")) lead -= 1;
  let end = lines.findIndex((line, i) => i > start && /^\s*\[/.test(line));
  if (end < 0) end = lines.length;
  while (end - 1 > start && /^\s*(#.*)?$/.test(lines[end - 1] ?? "")) end -= 1;
  const comments = lines.slice(lead, start).join("\n");
  const middle = section && [comments, section].filter(Boolean).join("\n");
  const head = lines.slice(0, lead).join("\n").trim();
  const tail = lines.slice(end).join("\n").trim();
  return `${[head, middle, tail].filter(Boolean).join("\n\n")}\n`;
}

function nest(path: string, value: Table): Table {
  return path
    .split(".")
    .reverse()
    .reduce<Table>((inner, key) => ({ [key]: inner }), value);
}

/** The comment lines a file starts with (init writes one saying where the keys are documented). */
function leadingComments(text: string): string {
  const lines: string[] = [];
  for (const line of text.split("\n")) {
    if (!line.startsWith("#")) break;
    lines.push(line);
  }
  return lines.length > 0 ? `${lines.join("\n")}\n` : "";
}

/** The variables `.env` sets. */
export function readEnvFile(home: string): Record<string, string> {
  const path = envPath(home);
  return existsSync(path) ? parseDotEnv(readFileSync(path, "utf8")) : {};
}

/**
 * Sets (`set`) and removes (`remove`) variables in `<home>/.env`, keeping its other lines; the file
 * is created if needed and is always left readable by its owner only (0600).
 */
export function updateEnvFile(home: string, set: Record<string, string>, remove: string[] = []): void {
  const path = envPath(home);
  const lines = existsSync(path) ? readFileSync(path, "utf8").split(/\r?\n/) : [];
  const nameOf = (line: string) => /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=/.exec(line)?.[1];
  const pending = new Map(Object.entries(set));
  const kept: string[] = [];
  for (const line of lines) {
    const name = nameOf(line);
    if (name !== undefined && remove.includes(name)) continue;
    if (name !== undefined && set[name] !== undefined) {
      // The first assignment is replaced; a later duplicate would only confuse.
      const value = pending.get(name);
      if (value !== undefined) kept.push(`${name}=${quoteEnv(value)}`);
      pending.delete(name);
      continue;
    }
    kept.push(line);
  }
  while (kept.length > 0 && kept[kept.length - 1] === "") kept.pop();
  for (const [name, value] of pending) kept.push(`${name}=${quoteEnv(value)}`);
  writeAtomically(path, kept.length > 0 ? `${kept.join("\n")}\n` : "", 0o600);
}

/** A value as lib/home.ts's parseDotEnv reads it back unchanged (single quotes are taken literally). */
function quoteEnv(value: string): string {
  if (/^[A-Za-z0-9_.:/+=@-]*$/.test(value)) return value;
  if (!value.includes("'") && !value.includes("\n")) return `'${value}'`;
  return `"${value.replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`;
}

/** Writes through a temporary file and a rename, so a reader never sees half a file. */
function writeAtomically(path: string, text: string, mode: number): void {
  const temp = `${path}.${process.pid}.tmp`;
  writeFileSync(temp, text, { mode });
  chmodSync(temp, mode);
  renameSync(temp, path);
}
