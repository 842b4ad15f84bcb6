import type { Logger } from "../sdk/index.js";

type Level = "info" | "warn" | "error";

/**
 * A small line logger for the daemon's own messages (the Arena logs requests through fastify's
 * pino). One line per entry on stderr: `time level message key=value…`. Callers never pass secrets.
 */
export function createLogger(write: (line: string) => void = (line) => process.stderr.write(line)): Logger {
  const emit = (level: Level, message: string, fields?: Record<string, unknown>) => {
    const extra = fields
      ? Object.entries(fields)
          .map(([k, v]) => ` ${k}=${typeof v === "string" ? JSON.stringify(v) : String(v)}`)
          .join("")
      : "";
    write(`${new Date().toISOString()} ${level} ${message}${extra}\n`);
  };
  return {
    info: (message, fields) => emit("info", message, fields),
    warn: (message, fields) => emit("warn", message, fields),
    error: (message, fields) => emit("error", message, fields),
  };
}
