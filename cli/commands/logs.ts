import { resolveHome } from "../../lib/home.js";
import { logFilePath } from "../../lib/log-file.js";
import {
  follow,
  type LogFilter,
  type LogLine,
  logFiles,
  matches,
  parseLevel,
  parseSince,
  pretty,
  readTail,
} from "../../lib/log-read.js";
import { SparError } from "../../sdk/errors.js";
import type { GlobalOptions } from "../output.js";

export interface LogsOptions extends GlobalOptions {
  follow?: boolean;
  level?: string;
  since?: string;
  fighter?: string;
  lines?: string;
}

/**
 * `spar logs`: the daemon's log file, filtered and pretty-printed (`--json`: the entries as written,
 * one JSON object a line); `-f` keeps printing until Ctrl-C.
 */
export async function logs(options: LogsOptions): Promise<void> {
  const path = logFilePath(resolveHome());
  const filter: LogFilter = {
    ...(options.level ? { level: parseLevel(options.level) } : {}),
    ...(options.since ? { since: parseSince(options.since) } : {}),
    ...(options.fighter ? { fighter: options.fighter } : {}),
  };
  if (!options.follow && logFiles(path).length === 0) {
    throw new SparError("NOT_FOUND", `no log at ${path} yet: the daemon writes it once it starts`);
  }
  const count = options.lines !== undefined ? Number(options.lines) : filter.since ? undefined : 100;
  const colour = process.stdout.isTTY === true && !process.env.NO_COLOR;
  const show = (line: LogLine) => process.stdout.write(`${options.json ? line.raw : pretty(line, colour)}\n`);
  const tail = logFiles(path).length ? readTail(path, filter, count) : { lines: [], offset: 0, ino: 0 };
  for (const line of tail.lines) show(line);
  if (!options.follow) return;
  const stop = new AbortController();
  const quit = () => stop.abort();
  process.once("SIGINT", quit);
  process.once("SIGTERM", quit);
  // A reader gone (spar logs -f | head): stop quietly.
  process.stdout.on("error", quit);
  await follow(path, tail, (line) => matches(line, filter) && show(line), stop.signal);
}
