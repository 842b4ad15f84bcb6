import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../kernel/host/config.js";
import { scopeLog } from "../sdk/plugin-scope.js";
import { createDaemonLog, logFilePath, scrub, secretValues } from "./log-file.js";
import { follow, type LogLine, parseSince, pretty, readTail } from "./log-read.js";

const homes: string[] = [];
function home(): string {
  const dir = mkdtempSync(join(tmpdir(), "spar-logs-"));
  homes.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of homes.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const entries = (path: string) =>
  readFileSync(path, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe("the daemon's log file", () => {
  it("writes JSON lines with time, level, msg and the fields, and echoes readable lines", async () => {
    const dir = home();
    const echoed: string[] = [];
    const log = createDaemonLog(dir, { echo: (line) => echoed.push(line) });
    log.info("request", { req_id: "r-1", status: 200 });
    log.warn("turn.after failed", { fighter: "ada", fighter_id: "f-1" });
    log.file.info("listening", { url: "http://127.0.0.1:1" });
    await log.close();
    const written = entries(logFilePath(dir));
    expect(written).toEqual([
      expect.objectContaining({ level: "info", msg: "request", req_id: "r-1", status: 200 }),
      expect.objectContaining({ level: "warn", msg: "turn.after failed", fighter: "ada", fighter_id: "f-1" }),
      expect.objectContaining({ level: "info", msg: "listening" }),
    ]);
    expect(Date.parse(String(written[0]?.time))).not.toBeNaN();
    // The file-only entry is not echoed.
    expect(echoed).toHaveLength(2);
    expect(echoed[1]).toMatch(/^\S+ warn turn\.after failed fighter="ada" fighter_id="f-1"\n$/);
    expect((await import("node:fs")).statSync(logFilePath(dir)).mode & 0o777).toBe(0o600);
  });

  it("keeps entries below the configured level out", async () => {
    const dir = home();
    const log = createDaemonLog(dir, { settings: { level: "warn", max_size: "10M", files: 5 }, echo: false });
    log.info("chatter");
    log.error("broken", { code: "X" });
    await log.close();
    expect(entries(logFilePath(dir)).map((e) => e.msg)).toEqual(["broken"]);
  });

  it("never writes a secret: credential fields are censored and the environment's keys scrubbed anywhere", async () => {
    const dir = home();
    const key = "sk-live-0123456789abcdef";
    const env = { OPENAI_API_KEY: key, SPAR_MASTER_KEY: "m".repeat(40), PATH: "/usr/bin", SHORT_KEY: "abc" };
    const secrets = secretValues(env);
    expect(secrets).toEqual(expect.arrayContaining([key, "m".repeat(40)]));
    expect(secrets).not.toContain("/usr/bin");
    const echoed: string[] = [];
    const log = createDaemonLog(dir, { secrets, echo: (line) => echoed.push(line) });
    log.error("provider refused", { error: `401: key ${key} is revoked` });
    log.warn("odd request", { headers: { authorization: "Bearer abc", signature: "sig1=:AAAA:" } });
    log.info("plugin settings", { settings: { api_key: "plain-value-1" }, env: { X: "y" } });
    log.info("a request", { req: { headers: { authorization: "Basic c2VjcmV0", cookie: "sid=abc" } } });
    await log.close();
    const text = readFileSync(logFilePath(dir), "utf8");
    for (const secret of [
      key,
      "Bearer abc",
      "sig1=:AAAA:",
      "plain-value-1",
      "m".repeat(40),
      "c2VjcmV0",
      "sid=abc",
    ]) {
      expect(text).not.toContain(secret);
    }
    expect(text).toContain("[redacted]");
    expect(echoed.join("")).not.toContain(key);
    expect(scrub(`"${key}"`, [key])).toBe('"[redacted]"');
  });

  it("rotates by size and keeps the configured count of rotated files", async () => {
    const dir = home();
    const log = createDaemonLog(dir, { settings: { level: "info", max_size: "2K", files: 2 }, echo: false });
    // One line a turn of the event loop, as a daemon's requests come: lines of one turn share a write.
    for (let i = 0; i < 200; i++) {
      log.info("filler", { i, pad: "x".repeat(40) });
      await new Promise((resolve) => setImmediate(resolve));
    }
    await log.close();
    const files = readdirSync(join(dir, "logs")).sort();
    expect(files).toEqual(["spar.log", "spar.log.1", "spar.log.2"]);
    // Each rotated file is near the limit, each line whole, and the newest entries are in spar.log.
    for (const file of ["spar.log.1", "spar.log.2"]) {
      const size = readFileSync(join(dir, "logs", file)).length;
      expect(size).toBeGreaterThanOrEqual(2048);
      expect(size).toBeLessThan(2048 + 200);
    }
    const last = entries(logFilePath(dir)).at(-1);
    expect(last?.i).toBe(199);
    const older = entries(join(dir, "logs", "spar.log.2"))[0]?.i as number;
    const newer = entries(join(dir, "logs", "spar.log.1"))[0]?.i as number;
    expect(older).toBeLessThan(newer);
    // readTail reaches into the rotated files for more lines than spar.log holds, oldest first.
    const current = entries(logFilePath(dir)).length;
    const tail = readTail(logFilePath(dir), {}, current + 5);
    expect(tail.lines.map((l) => l.entry?.i)).toEqual(
      Array.from({ length: current + 5 }, (_, n) => 200 - current - 5 + n),
    );
    expect(existsSync(join(dir, "logs", "spar.log.3"))).toBe(false);
  });

  it("follows the file across rotations, every line once and in order", async () => {
    const dir = home();
    const log = createDaemonLog(dir, { settings: { level: "info", max_size: "1K", files: 20 }, echo: false });
    log.info("before", { i: -1 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const start = readTail(logFilePath(dir), {}, 10);
    const seen: LogLine[] = [];
    const stop = new AbortController();
    const following = follow(logFilePath(dir), start, (line) => seen.push(line), stop.signal, 20);
    for (let i = 0; i < 60; i++) {
      log.info("line", { i, pad: "y".repeat(60) });
      await new Promise((resolve) => setImmediate(resolve));
      if (i % 10 === 0) await new Promise((resolve) => setTimeout(resolve, 30));
    }
    await log.close();
    await new Promise((resolve) => setTimeout(resolve, 200));
    stop.abort();
    await following;
    expect(readdirSync(join(dir, "logs")).length).toBeGreaterThan(3);
    expect(seen.map((l) => l.entry?.i)).toEqual(Array.from({ length: 60 }, (_, n) => n));
  });
});

describe("reading the log", () => {
  it("reads --since as a duration back or an ISO time, and refuses anything else", () => {
    const now = new Date("2026-01-01T10:00:00Z");
    expect(parseSince("15m", now).toISOString()).toBe("2026-01-01T09:45:00.000Z");
    expect(parseSince("1d", now).toISOString()).toBe("2025-12-31T10:00:00.000Z");
    expect(parseSince("2026-01-01T08:30:00Z", now).toISOString()).toBe("2026-01-01T08:30:00.000Z");
    expect(() => parseSince("yesterday", now)).toThrow(/--since must be/);
  });

  it("pretty-prints time, level, message and fields, coloured only when asked", () => {
    const line = {
      raw: "",
      entry: { time: "2026-01-01T10:00:00.000Z", level: "warn", msg: "slow", pid: 1, fighter: "ada", ms: 12 },
    };
    expect(pretty(line, false)).toBe("2026-01-01 10:00:00.000 WARN  slow fighter=ada ms=12");
    expect(pretty(line, true)).toContain("\x1b[33mWARN ");
    expect(pretty({ raw: "an older text line" }, false)).toBe("an older text line");
  });
});

describe("[logs] in config.toml", () => {
  const withConfig = (toml: string) => {
    const dir = home();
    writeFileSync(join(dir, "config.toml"), toml);
    return dir;
  };

  it("defaults to info, 10M and five files, and takes the user's values", () => {
    expect(loadConfig(withConfig(""), {}).logs).toEqual({ level: "info", max_size: "10M", files: 5 });
    const set = loadConfig(withConfig('[logs]\nlevel = "warn"\nmax_size = "512K"\nfiles = 2\n'), {});
    expect(set.logs).toEqual({ level: "warn", max_size: "512K", files: 2 });
  });

  it("refuses a size without its unit, an unknown level and an unknown key, naming the key", () => {
    expect(() => loadConfig(withConfig('[logs]\nmax_size = "10"\n'), {})).toThrow(/logs\.max_size|max_size/);
    expect(() => loadConfig(withConfig('[logs]\nlevel = "debug"\n'), {})).toThrow(/level/);
    expect(() => loadConfig(withConfig("[logs]\ncolour = true\n"), {})).toThrow(/colour/);
  });
});

describe("a plugin's logger", () => {
  it("tags every entry with the plugin's id", () => {
    const seen: [string, Record<string, unknown> | undefined][] = [];
    const log = {
      info: (m: string, f?: Record<string, unknown>) => seen.push([m, f]),
      warn: (m: string, f?: Record<string, unknown>) => seen.push([m, f]),
      error: (m: string, f?: Record<string, unknown>) => seen.push([m, f]),
    };
    const scoped = scopeLog(log, "channel-telegram");
    scoped.warn("poll failed", { error: "timeout" });
    scoped.info("up");
    expect(seen).toEqual([
      ["poll failed", { error: "timeout", plugin: "channel-telegram" }],
      ["up", { plugin: "channel-telegram" }],
    ]);
  });
});
