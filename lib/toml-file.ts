import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parse as parseToml, TomlError } from "smol-toml";
import { SparError } from "../sdk/errors.js";
import { CONFIG_SCHEMA } from "../sdk/schemas.js";

/**
 * Parses a TOML file. A syntax error is CONFIG_INVALID in one line, `<file>:<line>:<column>: <what>`
 * (the position editors jump to), with `line` and `column` beside the message. smol-toml's own words
 * are kept, but for the commonest typo, a string left open: it calls the line's end a "control
 * character", so that one is named for what it is, at the quote that opens it.
 *
 * @example
 * const raw = readTomlFile(join(home, "config.toml"));
 */
export function readTomlFile(path: string): Record<string, unknown> {
  const text = readFileSync(path, "utf8");
  try {
    return parseToml(text) as Record<string, unknown>;
  } catch (err) {
    throw tomlSyntaxError(path, text, err);
  }
}

function tomlSyntaxError(path: string, text: string, err: unknown): SparError {
  if (!(err instanceof TomlError))
    return new SparError("CONFIG_INVALID", `${path}: ${(err as Error).message}`);
  const what = (err.message.split("\n")[0] ?? "").replace(/^Invalid TOML document:\s*/, "");
  let { line, column } = err;
  let reason = what;
  const lineText = text.split(/\r?\n/)[line - 1] ?? "";
  const opened = openQuoteAt(lineText);
  if (what.startsWith("control characters") && column > lineText.length && opened !== undefined) {
    column = opened + 1;
    const quote = lineText[opened];
    reason = `unterminated string: the ${quote} at line ${line}, column ${column} has no closing ${quote} on its line`;
  } else if (what === "unfinished string") {
    reason = `unterminated string: the one that opens at line ${line}, column ${column} is not closed before the end of the file`;
  } else if (what.startsWith("control characters")) {
    const code = lineText
      .codePointAt(column - 1)
      ?.toString(16)
      .toUpperCase()
      .padStart(4, "0");
    reason = `a control character (U+${code}) in a string; write it as \\u${code}`;
  }
  return new SparError("CONFIG_INVALID", `${path}:${line}:${column}: ${reason}`, { line, column });
}

/** Where the string that a line leaves open starts (its quote's index), if one does. */
function openQuoteAt(line: string): number | undefined {
  for (let i = 0; i < line.length; i++) {
    const quote = line[i];
    if (quote === "#") return undefined;
    if (quote !== '"' && quote !== "'") continue;
    const start = i;
    for (i++; i < line.length && line[i] !== quote; i++) {
      // A literal ('…') string has no escapes; a basic one ("…") may escape its quote.
      if (quote === '"' && line[i] === "\\") i++;
    }
    if (i >= line.length) return start;
  }
  return undefined;
}

const DEFAULT_LISTEN = CONFIG_SCHEMA.properties.api_listen.default;

/**
 * The address the daemon listens on, as a command that only talks to it needs it: from
 * `SPAR_API_LISTEN`, else `api_listen` in config.toml, read without the rest of the schema, so a
 * typo elsewhere in the file (an unknown key, a bad table, even a line that does not parse) does not
 * cut the CLI off from a daemon that started before it. Only an `api_listen` line that cannot be
 * read is an error.
 */
export function readApiListen(home: string, env: NodeJS.ProcessEnv): string {
  if (env.SPAR_API_LISTEN) return env.SPAR_API_LISTEN;
  const path = join(home, "config.toml");
  if (!existsSync(path)) return DEFAULT_LISTEN;
  try {
    const value = readTomlFile(path).api_listen;
    if (value === undefined) return DEFAULT_LISTEN;
    if (typeof value === "string") return value;
    throw new SparError("CONFIG_INVALID", `${path}: api_listen must be a string like "${DEFAULT_LISTEN}"`);
  } catch (err) {
    const found = err instanceof SparError && "line" in err.extra ? scanApiListen(path) : undefined;
    if (found === undefined) throw err;
    return found ?? DEFAULT_LISTEN;
  }
}

/**
 * `api_listen` from a file that does not parse, line by line: the value of a plain top-level
 * `api_listen = "…"` line, null when no top-level line sets it (the default holds), undefined when
 * one does but cannot be read this way (then the parse error is the answer).
 */
function scanApiListen(path: string): string | null | undefined {
  for (const line of readFileSync(path, "utf8").split(/\r?\n/)) {
    // The keys after the first table header belong to that table.
    if (/^\s*\[/.test(line)) return null;
    if (!/^\s*api_listen\s*=/.test(line)) continue;
    return /^\s*api_listen\s*=\s*"([^"\\]*)"\s*(#.*)?$/.exec(line)?.[1];
  }
  return null;
}
