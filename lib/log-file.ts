/**
 * The daemon's log: JSON lines in `<data dir>/logs/spar.log` (pino), rotated by size and kept to a
 * count (rotating-file-stream, classic logrotate names: spar.log.1 is the newest rotated file), and,
 * for the foreground `spar start`, the same entries as readable lines on stderr (lib/logger.ts).
 *
 * Pino writes into the rotating stream in this thread: no transport, so no worker thread to start
 * or feed. The stream is an ordinary Writable, so a log line costs a buffer append on the message
 * path; the file is written asynchronously, and `close()` flushes what is left.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { pino } from "pino";
import { createStream, type RotatingFileStream } from "rotating-file-stream";
import type { LogsConfig } from "../sdk/config.js";
import type { Logger } from "../sdk/index.js";
import { createLogger } from "./logger.js";

/** The log folder in the data dir, and the live file in it. */
export const LOGS_DIR = "logs";
export const LOG_FILE = "spar.log";

/** `<home>/logs/spar.log`. */
export function logFilePath(home: string): string {
  return join(home, LOGS_DIR, LOG_FILE);
}

/** `[logs]`'s defaults: 10 MiB files, five rotated ones kept (60 MiB at most). */
export const DEFAULT_LOGS: Readonly<LogsConfig> = { level: "info", max_size: "10M", files: 5 };

/**
 * Structured fields that may hold a credential, censored (an entry's own field, or a header set
 * logged as `headers` or `req.headers`): no code logs them today, and a future line that does must
 * not leak them. No wildcards: pino's redaction with `*` paths walks every entry, doubling its cost,
 * and the environment's secret values are scrubbed from every line anyway (scrub).
 */
export const REDACT_PATHS = [
  "authorization",
  "signature",
  "cookie",
  "api_key",
  "password",
  "token",
  "env",
  "headers.authorization",
  "headers.signature",
  "headers.cookie",
  'headers["proxy-authorization"]',
  "req.headers.authorization",
  "req.headers.signature",
  "req.headers.cookie",
  "settings.api_key",
  "settings.token",
];

/** Variables whose values are credentials: provider keys, tokens, secrets, passwords. */
const SECRET_VARIABLE = /(_API_KEY|_KEY|_TOKEN|_SECRET|SECRET|PASSWORD|_PASS)$/i;

/**
 * The values of the environment's credential variables (8 characters or more, so that a short
 * value cannot blank out ordinary words): any line holding one has it replaced by `[redacted]`,
 * whatever the field (an error text that quotes a key, say). The master secret is among them.
 */
export function secretValues(env: Readonly<NodeJS.ProcessEnv>): string[] {
  const values = new Set<string>();
  for (const [name, value] of Object.entries(env)) {
    if (value && value.length >= 8 && SECRET_VARIABLE.test(name)) values.add(value);
  }
  return [...values].sort((a, b) => b.length - a.length);
}

/** `line` with every secret in it replaced. A JSON-escaped copy is looked for as well. */
export function scrub(line: string, secrets: readonly string[]): string {
  let out = line;
  for (const secret of secrets) {
    if (out.includes(secret)) out = out.split(secret).join("[redacted]");
    const escaped = JSON.stringify(secret).slice(1, -1);
    if (escaped !== secret && out.includes(escaped)) out = out.split(escaped).join("[redacted]");
  }
  return out;
}

export interface DaemonLog extends Logger {
  /** The file being written. */
  readonly path: string;
  /** The same, written to the file only (the daemon's start and stop, which `spar start` prints itself). */
  readonly file: Logger;
  /** Writes out what is buffered and closes the file. */
  close(): Promise<void>;
}

export interface DaemonLogOptions {
  settings?: Readonly<LogsConfig>;
  /** Credential values never to write (secretValues of the daemon's environment). */
  secrets?: readonly string[];
  /** Where the readable copy goes (stderr by default); `false` for none (a detached daemon). */
  echo?: ((line: string) => void) | false;
}

const RANK = { info: 30, warn: 40, error: 50 } as const;

/**
 * The daemon's logger: every entry to `<home>/logs/spar.log` as one JSON object (`time`, `level`,
 * `msg`, then the entry's fields), and, unless `echo` is false, as a readable line.
 *
 * @example
 * const log = createDaemonLog(home, { settings: config.logs, secrets: secretValues(env) });
 * log.info("listening", { url });
 * await log.close();
 */
export function createDaemonLog(home: string, options: DaemonLogOptions = {}): DaemonLog {
  const settings = options.settings ?? DEFAULT_LOGS;
  const secrets = options.secrets ?? [];
  const dir = join(home, LOGS_DIR);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const stream = openRotating(dir, settings);
  const sink = batched(stream, secrets);
  const file = pino(
    {
      level: settings.level,
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: REDACT_PATHS, censor: "[redacted]" },
    },
    sink,
  );
  const echoWrite = options.echo === false ? undefined : options.echo;
  const echo =
    options.echo === false
      ? undefined
      : createLogger(echoWrite ? (line) => echoWrite(scrub(line, secrets)) : scrubbedStderr(secrets));
  const least = RANK[settings.level];
  const entry =
    (level: keyof typeof RANK, echoed: boolean) =>
    (message: string, fields?: Record<string, unknown>): void => {
      if (RANK[level] < least) return;
      if (fields) file[level](fields, message);
      else file[level](message);
      if (echoed) echo?.[level](message, fields);
    };
  let closing: Promise<void> | undefined;
  return {
    path: join(dir, LOG_FILE),
    file: { info: entry("info", false), warn: entry("warn", false), error: entry("error", false) },
    info: entry("info", true),
    warn: entry("warn", true),
    error: entry("error", true),
    close() {
      closing ??= new Promise<void>((resolve) => {
        sink.flush();
        if (stream.destroyed || stream.writableEnded) return resolve();
        stream.end(() => resolve());
      });
      return closing;
    },
  };
}

/**
 * Pino's destination: the lines of one turn of the event loop are joined and handed to the file in
 * one write (one system call, one scrub) once the turn is over, so a log line costs the caller an
 * array push. The file is rotated at the first write past max_size, so a file may pass it by a
 * turn's lines.
 */
function batched(stream: RotatingFileStream, secrets: readonly string[]) {
  let pending: string[] = [];
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    if (pending.length === 0 || stream.writableEnded) return;
    const chunk = pending.join("");
    pending = [];
    stream.write(secrets.length ? scrub(chunk, secrets) : chunk);
  };
  return {
    write(line: string) {
      pending.push(line);
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    },
    flush,
  };
}

function scrubbedStderr(secrets: readonly string[]): (line: string) => void {
  return (line) => process.stderr.write(secrets.length ? scrub(line, secrets) : line);
}

/**
 * The rotating file: spar.log, renamed spar.log.1 once it reaches `max_size` (the older ones each
 * moving up one), and no more than `files` rotated files kept. Mode 0600: the log names fighters,
 * keys and peers.
 */
export function openRotating(dir: string, settings: Readonly<LogsConfig>): RotatingFileStream {
  const stream = createStream(LOG_FILE, {
    path: `${dir}/`,
    size: settings.max_size,
    rotate: settings.files,
    mode: 0o600,
  });
  // A write that fails (a full disk) must not take the daemon down with an unhandled 'error'.
  stream.on("error", (err) =>
    process.stderr.write(`spar: cannot write ${join(dir, LOG_FILE)}: ${err.message}\n`),
  );
  return stream;
}
