/**
 * The daemon's own secrets, from `<data dir>/.env`, through the real daemon: a provider key and a
 * channel token there work, yet they stay in the daemon's memory: an MCP server it starts sees none
 * of them but the one its config names, and neither the daemon's `/proc/<pid>/environ` (as
 * `spar start` and `spar start --detach` start it) nor any process it starts holds them.
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import { type FakeTelegram, startFakeTelegram } from "../fakes/telegram-server.js";
import {
  freePort,
  removeHome,
  runCli,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";

const FIXTURES = resolve(import.meta.dirname, "..", "fixtures", "mcp");
const WEBHOOK_SECRET = randomBytes(24).toString("base64url");

/** Every secret is in .env only: none is in the environment the daemon is started with. */
function dotEnvSecrets(telegramToken: string): Record<string, string> {
  return {
    SPAR_MASTER_KEY: randomBytes(32).toString("hex"),
    OPENAI_API_KEY: "sk-dotenv-provider-key-31415926",
    TELEGRAM_BOT_TOKEN: telegramToken,
    TELEGRAM_WEBHOOK_SECRET: WEBHOOK_SECRET,
    GITHUB_TOKEN: "ghp_dotenv_passed_by_name_2718",
  };
}

function writeDotEnv(home: string, secrets: Record<string, string>): void {
  const lines = Object.entries(secrets).map(([name, value]) => `${name}=${value}`);
  writeFileSync(join(home, ".env"), `${lines.join("\n")}\n`, { mode: 0o600 });
}

/** A process's environment as the kernel shows it: what it was exec'd with. */
function environOf(pid: number): Record<string, string> {
  const entries = readFileSync(`/proc/${pid}/environ`, "utf8").split("\0").filter(Boolean);
  return Object.fromEntries(entries.map((e) => [e.slice(0, e.indexOf("=")), e.slice(e.indexOf("=") + 1)]));
}

/** The names of `env` whose values are one of `secrets`' (values, never printed by a failure). */
function leaked(env: Record<string, string>, secrets: Record<string, string>): string[] {
  const values = new Set(Object.values(secrets));
  return Object.entries(env)
    .filter(([, value]) => [...values].some((secret) => value.includes(secret)))
    .map(([name]) => name);
}

async function eventually<T>(probe: () => Promise<T>, test: (value: T) => boolean, what: string): Promise<T> {
  for (let i = 0; i < 300; i++) {
    const value = await probe();
    if (test(value)) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe("the daemon's secrets in .env stay in its memory", () => {
  let fake: FakeOpenAI;
  let telegram: FakeTelegram;
  let secrets: Record<string, string>;
  let home: string;
  let data: string;
  let daemon: TestDaemon;
  const info = (name: string): { pid: number; env: Record<string, string> } =>
    JSON.parse(readFileSync(join(data, `${name}-info.json`), "utf8"));

  beforeAll(async () => {
    [fake, telegram] = await Promise.all([startFakeOpenAI(), startFakeTelegram()]);
    secrets = dotEnvSecrets(telegram.token);
    home = tempHome();
    data = join(home, "mcp-data");
    mkdirSync(data);
    const port = await freePort();
    const webhookPort = await freePort();
    const toml = (value: unknown) => JSON.stringify(value);
    writeConfig(
      home,
      port,
      fake.url,
      [
        "",
        "[creed]",
        "reflect = false",
        "[channels]",
        `webhook_listen = "127.0.0.1:${webhookPort}"`,
        "[channels.telegram]",
        `api_root = ${toml(telegram.url)}`,
        "allowlist = [424242]",
        "[tunnel]",
        'mode = "manual"',
        `url = "http://127.0.0.1:${webhookPort}"`,
        "[mcp]",
        "start_timeout_s = 20",
        "[mcp.servers.calendar]",
        `command = ${toml(process.execPath)}`,
        `args = ${toml([join(FIXTURES, "calendar.mjs"), "--file", join(data, "calendar.json"), "--info", join(data, "calendar-info.json")])}`,
        "[mcp.servers.outbox]",
        `command = ${toml(process.execPath)}`,
        `args = ${toml([join(FIXTURES, "outbox.mjs"), "--info", join(data, "outbox-info.json")])}`,
        `env = { OUTBOX_DIR = ${toml(join(data, "outbox"))} }`,
        'pass_env = ["GITHUB_TOKEN"]',
        "",
      ].join("\n"),
    );
    writeDotEnv(home, secrets);
    // The helper's default OPENAI_API_KEY is taken away: the key comes from .env or not at all.
    daemon = await startDaemon(home, port, { OPENAI_API_KEY: undefined });
    const created = await daemon.request("POST", "/api/v1/fighters", {
      manifest: {
        name: "clerk",
        description: "d",
        system_prompt: "p",
        capabilities: [
          { type: "mcp", server: "calendar" },
          { type: "mcp", server: "outbox" },
        ],
      },
    });
    expect(created.status).toBe(201);
  });

  afterAll(async () => {
    await daemon?.stop();
    await Promise.all([fake?.close(), telegram?.close()]);
    removeHome(home);
  });

  it("sends the provider key from .env as the Bearer, and starts MCP servers that see none of .env", async () => {
    fake.enqueue({
      tool_calls: [
        { name: "mcp_calendar_list_events", arguments: {} },
        { name: "mcp_outbox_list_sent", arguments: {} },
      ],
    });
    const reply = await daemon.request<{ tool_calls: { name: string; ok: boolean }[] }>(
      "POST",
      "/api/v1/fighters/clerk/message",
      { message: "look" },
    );
    expect(reply.status).toBe(200);
    expect(reply.body.tool_calls).toEqual([
      { name: "mcp_calendar_list_events", ok: true },
      { name: "mcp_outbox_list_sent", ok: true },
    ]);
    expect(fake.requests.length).toBeGreaterThan(0);
    for (const request of fake.requests)
      expect(request.headers.authorization).toBe(`Bearer ${secrets.OPENAI_API_KEY}`);

    const calendar = info("calendar").env;
    expect(leaked(calendar, secrets)).toEqual([]);
    // The outbox gets the one variable its config names, from .env, and nothing else of it.
    const outbox = info("outbox").env;
    expect(outbox.GITHUB_TOKEN).toBe(secrets.GITHUB_TOKEN);
    const { GITHUB_TOKEN: _named, ...others } = secrets;
    expect(leaked(outbox, others)).toEqual([]);
    // Nor did the server's own process start with them (what /proc shows of it).
    expect(leaked(environOf(info("calendar").pid), secrets)).toEqual([]);
  });

  it("uses the channel token from .env: Telegram accepts the bot and its webhook", async () => {
    const status = await eventually(
      async () => (await daemon.request<{ connected: boolean }>("GET", "/api/v1/channels/telegram")).body,
      (s) => s.connected,
      "the Telegram channel to connect",
    );
    expect(status.connected).toBe(true);
    expect(telegram.calls.some((c) => c.method === "setWebhook" && c.authorized)).toBe(true);
    expect(telegram.webhook()?.secret_token).toBe(WEBHOOK_SECRET);
  });

  it("holds none of them in the daemon's /proc/<pid>/environ", () => {
    const pid = daemon.process.pid as number;
    expect(readFileSync(join(home, "spar.pid"), "utf8").trim()).toBe(String(pid));
    expect(leaked(environOf(pid), secrets)).toEqual([]);
  });

  it("starts a background daemon (spar start --detach) without them in its environment", async () => {
    const other = tempHome();
    try {
      const port = await freePort();
      writeConfig(other, port, fake.url, "\n[creed]\nreflect = false\n");
      const { TELEGRAM_BOT_TOKEN: _t, TELEGRAM_WEBHOOK_SECRET: _w, ...keys } = secrets;
      writeDotEnv(other, keys);
      const started = await runCli(other, ["start", "--detach", "--json"]);
      expect(started.code, started.stderr).toBe(0);
      try {
        const { pid } = JSON.parse(started.stdout) as { pid: number };
        expect(leaked(environOf(pid), keys)).toEqual([]);
        // And it still has them where they are needed: the database opened with .env's master key.
        const health = await fetch(`http://127.0.0.1:${port}/api/v1/health`);
        expect(health.status).toBe(200);
      } finally {
        await runCli(other, ["stop"]);
      }
    } finally {
      removeHome(other);
    }
  });
});
