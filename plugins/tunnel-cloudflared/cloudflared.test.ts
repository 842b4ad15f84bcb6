/**
 * The cloudflared runner against the fake cloudflared (test/fixtures/cloudflared/cloudflared, a real
 * process printing what the real one prints): a quick tunnel's URL read from its box, a named tunnel
 * up once a connection registers, each way of failing with its message, the environment it gets, and
 * the process gone once stopped.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { Logger } from "../../sdk/index.js";
import { cloudflaredEnv, type RunningCloudflared, startCloudflared } from "./cloudflared.js";
import { isRegistered, logLine, quickTunnelUrl } from "./output.js";

const FAKE = resolve(import.meta.dirname, "..", "..", "test", "fixtures", "cloudflared", "cloudflared");
const TARGET = "http://127.0.0.1:6661";

interface Started {
  record: string;
  lines: string[];
  run: (overrides?: {
    args?: string[];
    quick?: boolean;
    timeoutMs?: number;
    behaviour?: string;
    executable?: string;
    signal?: AbortSignal;
  }) => Promise<RunningCloudflared>;
}

const dirs: string[] = [];
const running: RunningCloudflared[] = [];

function setup(): Started {
  const dir = mkdtempSync(join(tmpdir(), "spar-cloudflared-"));
  dirs.push(dir);
  const record = join(dir, "record.jsonl");
  const lines: string[] = [];
  const log: Logger = {
    info: (_message, fields) => lines.push(String(fields?.line)),
    warn: () => {},
    error: () => {},
  };
  return {
    record,
    lines,
    run: async (o = {}) => {
      const env = {
        ...process.env,
        OPENAI_API_KEY: "sk-never-passed",
        TELEGRAM_BOT_TOKEN: "123:never-passed",
        SPAR_MASTER_KEY: "never-passed",
        CLOUDFLARED_FAKE_RECORD: record,
        CLOUDFLARED_FAKE_BEHAVIOUR: o.behaviour ?? "",
      };
      const started = await startCloudflared({
        executable: o.executable ?? FAKE,
        args: o.args ?? ["tunnel", "--no-autoupdate", "--url", TARGET],
        quick: o.quick ?? true,
        timeoutMs: o.timeoutMs ?? 20_000,
        log,
        signal: o.signal ?? new AbortController().signal,
        env: cloudflaredEnv(env),
      });
      running.push(started);
      return started;
    },
  };
}

/** Each start the fake recorded: its pid, arguments and the names of the variables it got. */
function records(file: string): { pid: number; args: string[]; env: string[] }[] {
  return readFileSync(file, "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as { pid: number; args: string[]; env: string[] });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.stop()));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("startCloudflared", () => {
  it("opens a quick tunnel: the URL from the box, the arguments as given, no secret in its environment", async () => {
    const { run, record, lines } = setup();
    const tunnel = await run();
    expect(tunnel.url).toMatch(/^https:\/\/[a-z0-9]+(-[a-z0-9]+)+\.trycloudflare\.com$/);
    const [started] = records(record);
    expect(started?.args).toEqual(["tunnel", "--no-autoupdate", "--url", TARGET]);
    expect(started?.env).toContain("PATH");
    expect(started?.env).not.toContain("OPENAI_API_KEY");
    expect(started?.env).not.toContain("TELEGRAM_BOT_TOKEN");
    expect(started?.env).not.toContain("SPAR_MASTER_KEY");
    // Its lines went to the log without cloudflared's time and level, the URL among them.
    expect(lines.some((l) => l.includes(tunnel.url as string))).toBe(true);
    expect(lines.every((l) => !/^\d{4}-\d{2}-\d{2}T/.test(l))).toBe(true);
    expect(lines.some((l) => isRegistered(l))).toBe(true);
    await tunnel.stop();
    expect(alive(started?.pid as number)).toBe(false);
  });

  it("opens a named tunnel once a connection is registered", async () => {
    const { run, record } = setup();
    const args = ["tunnel", "--no-autoupdate", "run", "--url", TARGET, "spar"];
    const tunnel = await run({ args, quick: false });
    expect(tunnel.url).toBeUndefined();
    expect(records(record)[0]?.args).toEqual(args);
  });

  it("says cloudflared is not installed, and how to install it, when the executable is missing", async () => {
    const { run } = setup();
    const missing = join(tmpdir(), "no-such-dir", "cloudflared");
    await expect(run({ executable: missing })).rejects.toMatchObject({
      code: "TUNNEL_UNAVAILABLE",
      extra: { reason: "cloudflared_not_installed" },
      message: expect.stringMatching(
        /^cloudflared is not installed \(.*no-such-dir\/cloudflared was not found\): install it from https:\/\/developers\.cloudflare\.com\/.*downloads\/ \(Debian: the cloudflare apt repository\), or set \[tunnel\] mode = "manual"/,
      ),
    });
    await expect(run({ executable: "cloudflared-not-on-this-path" })).rejects.toMatchObject({
      code: "TUNNEL_UNAVAILABLE",
      extra: { reason: "cloudflared_not_installed" },
    });
  });

  it("reports cloudflared's own error when it stops before the tunnel is up", async () => {
    const { run } = setup();
    await expect(run({ behaviour: "fail" })).rejects.toMatchObject({
      code: "TUNNEL_UNAVAILABLE",
      extra: { reason: "cloudflared_failed" },
      message: expect.stringContaining(
        "cloudflared stopped (exit code 1) before its tunnel was up; its last lines: Requesting new quick Tunnel",
      ),
    });
  });

  it("gives up after the timeout when no tunnel comes, and stops the process", async () => {
    const { run, record } = setup();
    // 2 s: the fake (a Node script) records its start before the time runs out, even on a loaded CI.
    await expect(run({ behaviour: "silent", timeoutMs: 2000 })).rejects.toMatchObject({
      code: "TUNNEL_UNAVAILABLE",
      extra: { reason: "cloudflared_timeout" },
      message: "cloudflared opened no tunnel within 2 s",
    });
    const pid = records(record)[0]?.pid as number;
    for (let i = 0; i < 100 && alive(pid); i++) await new Promise((r) => setTimeout(r, 50));
    expect(alive(pid)).toBe(false);
  });

  it("gives up when the daemon closes while it waits", async () => {
    const { run } = setup();
    const closing = new AbortController();
    const pending = run({ behaviour: "silent", signal: closing.signal });
    closing.abort();
    await expect(pending).rejects.toMatchObject({ code: "CANCELLED" });
  });

  it("tells its listener when cloudflared dies after the tunnel was up, not when it is stopped", async () => {
    const { run } = setup();
    const dying = await run({ behaviour: "exit-later" });
    const how = await new Promise<string>((done) => dying.onExit(done));
    expect(how).toBe("exit code 1");

    const stopped = await run();
    let told = false;
    stopped.onExit(() => {
      told = true;
    });
    await stopped.stop();
    expect(told).toBe(false);
  });
});

describe("cloudflared's output", () => {
  it("masks credentials before a line is logged", () => {
    const token = `eyJhIjoiY2FmZSIsInQiOiJkZWFkYmVlZiIsInMiOiJzZWNyZXRzZWNyZXQifQ${"x".repeat(20)}`;
    const shown = logLine(
      `2025-01-01T00:00:00Z INF Settings: map[no-autoupdate:true token:${token} url:http://127.0.0.1:6661]`,
    );
    expect(shown).toBe("Settings: map[no-autoupdate:true token:[redacted] url:http://127.0.0.1:6661]");
    expect(logLine(`2025-01-01T00:00:00Z ERR bad credential ${token}`)).toBe("bad credential [redacted]");
  });

  it("takes the quick tunnel's host from the box, never cloudflared's API host", () => {
    expect(quickTunnelUrl("|  https://seasonal-deck-organisms-sf.trycloudflare.com      |")).toBe(
      "https://seasonal-deck-organisms-sf.trycloudflare.com",
    );
    expect(
      quickTunnelUrl('failed to request quick Tunnel: Post "https://api.trycloudflare.com/tunnel"'),
    ).toBe(undefined);
  });
});
