/**
 * `spar channel` through the real CLI against the platform fakes (test/fakes/telegram-server.ts,
 * slack-server.ts, discord-server.ts) and the real daemon: Telegram set up without a terminal (the
 * token checked with getMe, `@names` and an empty allowlist refused with the way to find an id, a bad
 * token refused, the secrets in a 0600 .env and never printed, config.toml's other tables and comments
 * kept, the webhook registered with the generated secret, a re-run registering again), Slack (its
 * token read from stdin) and Discord set up against their fakes, `list` and `status` against a
 * daemon configured by setup (and `list` without one), `tunnel` shown and changed, `remove` deleting
 * the webhook and cleaning config.toml and .env; and once, the interactive wizard through a
 * pseudo-terminal (util-linux `script`), answering its prompts as a person would.
 */
import { spawn } from "node:child_process";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "smol-toml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseDotEnv } from "../../lib/home.js";
import { type FakeDiscord, startFakeDiscord } from "../fakes/discord-server.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import { type FakeSlack, startFakeSlack } from "../fakes/slack-server.js";
import { FAKE_BOT, type FakeTelegram, startFakeTelegram } from "../fakes/telegram-server.js";
import {
  type CliResult,
  freePort,
  removeHome,
  runCli,
  SPAR_BIN,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";

type Table = Record<string, unknown>;

const config = (home: string) => parse(readFileSync(join(home, "config.toml"), "utf8")) as Table;
const dotEnv = (home: string) => parseDotEnv(readFileSync(join(home, ".env"), "utf8"));
const envMode = (home: string) => statSync(join(home, ".env")).mode & 0o777;
const channelTable = (home: string, platform: string) => (config(home).channels as Table)[platform] as Table;

/** The real CLI with `input` on its stdin (for `--token -`). */
function runCliWithInput(home: string, args: string[], input: string): Promise<CliResult> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [SPAR_BIN, ...args], {
      env: { PATH: process.env.PATH, SPAR_HOME: home },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    child.once("close", (code) => done({ code: code ?? 1, stdout, stderr }));
    child.stdin.end(input);
  });
}

/** Every line the CLI printed, both streams. */
const said = (run: CliResult) => `${run.stdout}\n${run.stderr}`;

describe("spar channel setup telegram, list, status, remove", () => {
  let telegram: FakeTelegram;
  let llm: FakeOpenAI;
  let home: string;
  let port: number;
  let webhookPort: number;
  let daemon: TestDaemon | undefined;
  const setup = (...args: string[]) =>
    runCli(home, ["channel", "setup", "telegram", "--api-root", telegram.url, ...args]);

  beforeAll(async () => {
    telegram = await startFakeTelegram();
    llm = await startFakeOpenAI();
    home = tempHome();
    port = await freePort();
    webhookPort = await freePort();
    writeConfig(
      home,
      port,
      llm.url,
      `\n# the agent's limits, kept as written\n[agent]\nmax_iterations = 7 # seven\n\n` +
        `[creed]\nreflect = false\n\n[channels]\nwebhook_listen = "127.0.0.1:${webhookPort}"\n`,
    );
  });

  afterAll(async () => {
    await daemon?.stop();
    await telegram?.close();
    await llm?.close();
    removeHome(home);
  });

  it("refuses an @username in the allowlist, saying how to find the numeric id, before calling Telegram", async () => {
    const before = readFileSync(join(home, "config.toml"), "utf8");
    const callsBefore = telegram.calls.length;
    const run = await setup(
      "--token",
      telegram.token,
      "--allow",
      "424242,@someone",
      "--tunnel",
      "quick",
      "--yes",
    );
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('"@someone" is a username');
    expect(run.stderr).toContain("numeric user ids");
    expect(run.stderr).toContain("message @userinfobot");
    expect(run.stderr).toContain("message.from.id");
    expect(run.stderr).toContain("(VALIDATION_FAILED)");
    expect(readFileSync(join(home, "config.toml"), "utf8")).toBe(before);
    expect(said(run)).not.toContain(telegram.token);
    // Refused on the flag alone: the token never went to Telegram (no getMe).
    expect(telegram.calls.length).toBe(callsBefore);
  });

  it("refuses an empty allowlist, and one not given", async () => {
    const empty = await setup("--token", telegram.token, "--allow", ",", "--yes");
    expect(empty.code).toBe(1);
    expect(empty.stderr).toContain("an empty allowlist means nobody can talk to the bot");
    const missing = await setup("--token", telegram.token, "--yes");
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("spar channel setup telegram needs --allow <id,id,…>");
  });

  it("refuses a token Telegram does not accept, without printing it", async () => {
    const wrong = "123456:AAWrongTokenWrongTokenWrongToken";
    const run = await setup("--token", wrong, "--allow", "424242", "--yes");
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("Telegram refused the bot token (getMe: Unauthorized)");
    expect(said(run)).not.toContain(wrong);
    expect(telegram.calls.at(-1)).toMatchObject({ method: "getMe", authorized: false });
    const malformed = await setup("--token", "not a token", "--allow", "424242", "--yes");
    expect(malformed.code).toBe(1);
    expect(malformed.stderr).toContain("that is not a Telegram bot token");
  });

  it("saves the token and a generated secret in a 0600 .env, the table in config.toml, and registers the webhook", async () => {
    const url = `http://127.0.0.1:${webhookPort}`;
    const run = await setup(
      "--token",
      telegram.token,
      "--allow",
      "424242, 555",
      "--tunnel",
      "manual",
      "--url",
      `${url}/`,
      "--yes",
    );
    expect(run.code, said(run)).toBe(0);
    expect(run.stdout).toContain(`bot @${FAKE_BOT.username}`);
    expect(run.stdout).toContain(`Telegram will deliver to ${url}/telegram`);
    expect(run.stdout).toContain("Restart the daemon");
    expect(run.stdout).toContain("spar channel status telegram");

    const env = dotEnv(home);
    expect(envMode(home)).toBe(0o600);
    expect(env.TELEGRAM_BOT_TOKEN).toBe(telegram.token);
    const secret = env.TELEGRAM_WEBHOOK_SECRET ?? "";
    expect(secret).toMatch(/^[A-Za-z0-9_-]{32}$/);
    for (const value of [telegram.token, secret]) expect(said(run)).not.toContain(value);

    const written = config(home);
    expect(channelTable(home, "telegram")).toEqual({
      token_env: "TELEGRAM_BOT_TOKEN",
      webhook_secret_env: "TELEGRAM_WEBHOOK_SECRET",
      allowlist: [424242, 555],
      fighter: "spar",
      api_root: telegram.url,
    });
    expect(written.tunnel).toEqual({ mode: "manual", url });
    // Everything else as it was, comments included.
    expect(written.default_model).toMatchObject({
      provider: "openai",
      model: "fake-model",
      base_url: llm.url,
    });
    expect(written.agent).toEqual({ max_iterations: 7 });
    expect((written.channels as Table).webhook_listen).toBe(`127.0.0.1:${webhookPort}`);
    const text = readFileSync(join(home, "config.toml"), "utf8");
    expect(text).toContain("# the agent's limits, kept as written\n[agent]\nmax_iterations = 7 # seven\n");
    expect(text).not.toContain(telegram.token);

    expect(telegram.webhook()).toEqual({
      url: `${url}/telegram`,
      secret_token: secret,
      allowed_updates: ["message", "callback_query"],
    });
  });

  it("registers again when run again, keeping the secret and what it is not told to change", async () => {
    const registrations = () => telegram.calls.filter((c) => c.method === "setWebhook").length;
    const before = registrations();
    const secret = dotEnv(home).TELEGRAM_WEBHOOK_SECRET;
    const run = await runCli(home, ["channel", "setup", "telegram", "--allow", "424242", "--json"]);
    expect(run.code, said(run)).toBe(0);
    expect(registrations()).toBe(before + 1);
    const result = JSON.parse(run.stdout) as Table;
    expect(result).toMatchObject({
      platform: "telegram",
      bot: { name: `@${FAKE_BOT.username}`, id: String(FAKE_BOT.id) },
      allowlist: [424242],
      fighter: "spar",
      tunnel: { mode: "manual", url: `http://127.0.0.1:${webhookPort}` },
      webhook_url: `http://127.0.0.1:${webhookPort}/telegram`,
      webhook_registered: true,
      variables: ["TELEGRAM_BOT_TOKEN", "TELEGRAM_WEBHOOK_SECRET"],
    });
    expect(run.stdout).not.toContain(telegram.token);
    expect(dotEnv(home).TELEGRAM_WEBHOOK_SECRET).toBe(secret);
    expect(telegram.webhook()?.secret_token).toBe(secret);
    expect(channelTable(home, "telegram").allowlist).toEqual([424242]);
    expect(channelTable(home, "telegram").api_root).toBe(telegram.url);
  });

  it("lists what config.toml has while the daemon is not running", async () => {
    const run = await runCli(home, ["channel", "list"]);
    expect(run.code, said(run)).toBe(0);
    expect(run.stdout).toContain("Spar is not running");
    expect(run.stdout).toMatch(/telegram\s+spar\s+1/);
    const json = await runCli(home, ["channel", "list", "--json"]);
    expect(JSON.parse(json.stdout)).toEqual({
      running: false,
      channels: [{ platform: "telegram", fighter: "spar", allowlist_size: 1 }],
    });
    const tunnel = await runCli(home, ["channel", "tunnel"]);
    expect(tunnel.stdout).toContain(`[tunnel] manual, http://127.0.0.1:${webhookPort}`);
  });

  it("lists the channel and shows its status from the daemon setup configured", async () => {
    daemon = await startDaemon(home, port);
    type Listed = { running: boolean; channels: { platform: string; connected: boolean }[] };
    let listed: Listed = { running: false, channels: [] };
    for (let i = 0; i < 200 && !listed.channels[0]?.connected; i++) {
      const run = await daemon.cli(["channel", "list", "--json"]);
      expect(run.code, said(run)).toBe(0);
      listed = JSON.parse(run.stdout) as Listed;
      if (!listed.channels[0]?.connected) await new Promise((r) => setTimeout(r, 50));
    }
    expect(listed.running).toBe(true);
    expect(listed.channels).toMatchObject([{ platform: "telegram", connected: true }]);

    const table = await daemon.cli(["channel", "list"]);
    expect(table.stdout).toMatch(/^PLATFORM\s+MODE\s+CONNECTED\s+FIGHTER\s+ALLOWED\s+IN\/OUT/);
    expect(table.stdout).toMatch(/\ntelegram\s+webhook\s+yes\s+spar\s+1\s+0\/0\s+0\s+-\n/);

    const url = `http://127.0.0.1:${webhookPort}`;
    const status = await daemon.cli(["channel", "status", "telegram"]);
    expect(status.code, said(status)).toBe(0);
    expect(status.stdout).toContain("telegram: connected (webhook)");
    expect(status.stdout).toContain(`${url}/telegram (the tunnel's current URL)`);
    expect(status.stdout).toContain(`${url} (manual)`);
    expect(status.stdout).toContain("1 sender");
    expect(status.stdout).toContain("0 bad signature, 0 not on the allowlist, 0 over the rate");
    const json = JSON.parse((await daemon.cli(["channel", "status", "telegram", "--json"])).stdout) as Table;
    expect(json).toMatchObject({
      channel: { platform: "telegram", connected: true, webhook_url: `${url}/telegram`, allowlist_size: 1 },
      tunnel: { url, mode: "manual" },
      webhook_matches_tunnel: true,
    });
    const shown = await daemon.cli(["channel", "tunnel"]);
    expect(shown.stdout).toBe(`Tunnel: ${url} (manual)\n`);
    const unknown = await daemon.cli(["channel", "status", "slack"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("spar channel setup slack");
  });

  it("removes the channel: the webhook deleted, the table and the secrets gone, the rest kept", async () => {
    await daemon?.stop();
    daemon = undefined;
    expect(telegram.webhook()).toBeDefined();
    const run = await runCli(home, ["channel", "remove", "telegram"]);
    expect(run.code, said(run)).toBe(0);
    expect(run.stdout).toContain("Deleted the webhook at Telegram");
    expect(run.stdout).toContain("Restart the daemon");
    expect(telegram.calls.at(-1)).toMatchObject({ method: "deleteWebhook", authorized: true });
    expect(telegram.webhook()).toBeUndefined();
    const written = config(home);
    expect((written.channels as Table).telegram).toBeUndefined();
    expect((written.channels as Table).webhook_listen).toBe(`127.0.0.1:${webhookPort}`);
    expect(written.agent).toEqual({ max_iterations: 7 });
    expect(dotEnv(home)).toEqual({});
    expect(envMode(home)).toBe(0o600);
    const again = await runCli(home, ["channel", "remove", "telegram"]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("no [channels.telegram] in config.toml");
  });

  it("changes the tunnel with spar channel tunnel --mode", async () => {
    const run = await runCli(home, [
      "channel",
      "tunnel",
      "--mode",
      "named",
      "--name",
      "spar-bots",
      "--hostname",
      "bots.example.com",
    ]);
    expect(run.code, said(run)).toBe(0);
    expect(run.stdout).toContain('Saved [tunnel] mode = "named": https://bots.example.com');
    // The manual URL of before is gone: a named tunnel's URL is its hostname.
    expect(config(home).tunnel).toEqual({
      mode: "named",
      name: "spar-bots",
      hostname: "bots.example.com",
    });
    const manual = await runCli(home, [
      "channel",
      "tunnel",
      "--mode",
      "manual",
      "--url",
      "https://old.example.com",
    ]);
    expect(manual.code, said(manual)).toBe(0);
    expect(config(home).tunnel).toEqual({ mode: "manual", url: "https://old.example.com" });
    // Back to quick: the manual URL no longer applies, so it is neither kept nor shown.
    const quick = await runCli(home, ["channel", "tunnel", "--mode", "quick"]);
    expect(quick.code, said(quick)).toBe(0);
    expect(quick.stdout).toContain('Saved [tunnel] mode = "quick" (a new URL at every start)');
    expect(config(home).tunnel).toEqual({ mode: "quick" });
    const shown = await runCli(home, ["channel", "tunnel"]);
    expect(shown.stdout).toContain("[tunnel] quick (a new URL at every start)");
    expect(said(shown)).not.toContain("old.example.com");
    const incomplete = await runCli(home, ["channel", "tunnel", "--mode", "manual", "--url", "ftp://x"]);
    expect(incomplete.code).toBe(1);
    expect(incomplete.stderr).toContain("--url: an http:// or https:// URL");
  });

  it("says a channel set up while the daemon runs is configured and waits for a restart", async () => {
    daemon = await startDaemon(home, port);
    const none = await daemon.cli(["channel", "list"]);
    expect(none.stdout).toContain("No channels are configured");
    const run = await setup(
      ...["--token", telegram.token, "--allow", "424242"],
      ...["--tunnel", "manual", "--url", `http://127.0.0.1:${webhookPort}`, "--yes"],
    );
    expect(run.code, said(run)).toBe(0);
    const restart = "restart the daemon (spar stop, then spar start --detach)";
    const listed = await daemon.cli(["channel", "list"]);
    expect(listed.code, said(listed)).toBe(0);
    expect(listed.stdout).toContain(`telegram: configured; ${restart} to activate it`);
    expect(listed.stdout).not.toContain("No channels are configured");
    const json = await daemon.cli(["channel", "list", "--json"]);
    expect(JSON.parse(json.stdout)).toEqual({
      running: true,
      channels: [],
      inactive: ["telegram"],
      removed: [],
    });
    const status = await daemon.cli(["channel", "status", "telegram"]);
    expect(status.code).toBe(1);
    expect(status.stderr).toContain(
      `telegram is configured in config.toml, but the running daemon started before it was: ${restart} to activate it`,
    );
  });
});

describe("spar channel setup slack and discord", () => {
  let slack: FakeSlack;
  let discord: FakeDiscord;
  let home: string;

  beforeAll(async () => {
    slack = await startFakeSlack();
    discord = await startFakeDiscord();
    home = tempHome();
    // A port no daemon listens on: `channel list` asks the daemon first, and one of the machine's
    // own (on the default 127.0.0.1:6660) must not answer for this data dir.
    writeFileSync(join(home, "config.toml"), `api_listen = "127.0.0.1:${await freePort()}"\n`);
  });

  afterAll(async () => {
    await slack?.close();
    await discord?.close();
    removeHome(home);
  });

  it("sets Slack up: the token checked with auth.test, the signing secret saved, the URL to paste printed", async () => {
    const signingSecret = "8f742231b10e8888abcd99yyyzzz85a5";
    const base = ["channel", "setup", "slack", "--api-root", slack.url, "--signing-secret", signingSecret];
    const name = await runCli(home, [...base, "--token", slack.token, "--allow", "@bob", "--yes"]);
    expect(name.code).toBe(1);
    expect(name.stderr).toContain('"@bob" is not a Slack member id');
    expect(name.stderr).toContain("Copy member ID");
    // Every flag is checked before Slack is called: neither a bad --allow nor a missing signing
    // secret costs an auth.test.
    const noSecret = await runCli(home, [
      ...["channel", "setup", "slack", "--api-root", slack.url, "--token", slack.token],
      ...["--allow", "U0ALLOWED1", "--yes"],
    ]);
    expect(noSecret.code).toBe(1);
    expect(noSecret.stderr).toContain("needs --signing-secret <secret>");
    const blank = await runCli(home, [
      ...["channel", "setup", "slack", "--api-root", slack.url, "--token", slack.token],
      ...["--signing-secret", " ", "--allow", "U0ALLOWED1", "--yes"],
    ]);
    expect(blank.code).toBe(1);
    expect(blank.stderr).toContain("--signing-secret: the Signing Secret is empty");
    expect(slack.calls().filter((c) => c.method === "auth.test")).toEqual([]);

    const wrong = await runCli(home, [...base, "--token", "xoxb-1-wrong", "--allow", "U0ALLOWED1", "--yes"]);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain("Slack refused the token (auth.test: invalid_auth)");

    // The token from stdin, so that it never shows in the process list.
    const run = await runCliWithInput(
      home,
      [
        ...base,
        "--token",
        "-",
        "--allow",
        "u0allowed1,W0OTHER22",
        "--fighter",
        "helper",
        "--url",
        "https://bots.example.com",
        "--yes",
      ],
      `${slack.token}\n`,
    );
    expect(run.code, said(run)).toBe(0);
    expect(run.stdout).toContain("bot spar in Spar Test");
    expect(run.stdout).toContain("https://bots.example.com/slack/events");
    expect(run.stdout).toContain("Event Subscriptions");
    for (const secret of [slack.token, signingSecret]) expect(said(run)).not.toContain(secret);
    const checks = slack.calls().filter((c) => c.method === "auth.test");
    expect(checks.map((c) => c.authorized)).toEqual([false, true]);
    expect(dotEnv(home)).toMatchObject({ SLACK_BOT_TOKEN: slack.token, SLACK_SIGNING_SECRET: signingSecret });
    expect(envMode(home)).toBe(0o600);
    expect(channelTable(home, "slack")).toEqual({
      token_env: "SLACK_BOT_TOKEN",
      signing_secret_env: "SLACK_SIGNING_SECRET",
      allowlist: ["U0ALLOWED1", "W0OTHER22"],
      fighter: "helper",
      api_root: slack.url,
    });
    expect(config(home).tunnel).toEqual({ mode: "manual", url: "https://bots.example.com" });
  });

  it("sets Discord up: the token checked, the public key and application id taken from its application", async () => {
    const base = ["channel", "setup", "discord", "--api-root", discord.url, "--token", discord.token];
    const short = await runCli(home, [...base, "--allow", "12345", "--yes"]);
    expect(short.code).toBe(1);
    expect(short.stderr).toContain('"12345" is not a Discord user id');
    expect(short.stderr).toContain("Copy User ID");
    const shortToken = await runCli(home, [
      ...["channel", "setup", "discord", "--api-root", discord.url, "--token", "MTA.too-short"],
      ...["--allow", "300000000000000001", "--yes"],
    ]);
    expect(shortToken.code).toBe(1);
    expect(shortToken.stderr).toContain("that is not a Discord bot token (at least 20 characters");
    const badKey = await runCli(home, [
      ...base,
      "--allow",
      "300000000000000001",
      "--public-key",
      "xyz",
      "--yes",
    ]);
    expect(badKey.code).toBe(1);
    expect(badKey.stderr).toContain("--public-key must be the application's Public Key: 64 hex characters");
    // None of these reached Discord: the flags are refused before the token is sent anywhere.
    expect(discord.calls).toEqual([]);

    const wrongKey = await runCli(home, [
      ...base,
      "--allow",
      "300000000000000001",
      "--public-key",
      "ab".repeat(32),
      "--yes",
    ]);
    expect(wrongKey.code).toBe(1);
    expect(wrongKey.stderr).toContain("--public-key is not the public key of the application");

    const wrongToken = await runCli(home, [
      "channel",
      "setup",
      "discord",
      "--api-root",
      discord.url,
      "--token",
      "MTA.fake.not-the-token-at-all",
      "--allow",
      "300000000000000001",
      "--yes",
    ]);
    expect(wrongToken.code).toBe(1);
    expect(wrongToken.stderr).toContain("Discord refused the bot token");

    const run = await runCli(home, [
      ...base,
      "--allow",
      "300000000000000001",
      "--tunnel",
      "named",
      "--name",
      "spar",
      "--hostname",
      "https://bots.example.com/",
      "--yes",
    ]);
    expect(run.code, said(run)).toBe(0);
    expect(run.stdout).toContain(`Discord application ${discord.applicationId}`);
    expect(run.stdout).toContain(
      "Interactions Endpoint URL to https://bots.example.com/discord/interactions",
    );
    expect(run.stdout).toContain("Message Content Intent");
    expect(said(run)).not.toContain(discord.token);
    expect(dotEnv(home)).toMatchObject({
      DISCORD_BOT_TOKEN: discord.token,
      DISCORD_PUBLIC_KEY: discord.publicKey,
      // Slack's, from the test before, untouched.
      SLACK_BOT_TOKEN: slack.token,
    });
    expect(channelTable(home, "discord")).toEqual({
      token_env: "DISCORD_BOT_TOKEN",
      public_key_env: "DISCORD_PUBLIC_KEY",
      application_id: discord.applicationId,
      allowlist: ["300000000000000001"],
      fighter: "spar",
      api_root: discord.url,
    });
    // Slack's manual URL went with the switch to a named tunnel.
    expect(config(home).tunnel).toEqual({
      mode: "named",
      name: "spar",
      hostname: "bots.example.com",
    });
    expect(channelTable(home, "slack").fighter).toBe("helper");
    const listed = JSON.parse((await runCli(home, ["channel", "list", "--json"])).stdout) as Table;
    expect(listed.channels).toEqual([
      { platform: "slack", fighter: "helper", allowlist_size: 2 },
      { platform: "discord", fighter: "spar", allowlist_size: 1 },
    ]);
  });
});

describe("spar channel setup on a terminal", () => {
  let telegram: FakeTelegram;
  let home: string;

  beforeAll(async () => {
    telegram = await startFakeTelegram();
    home = tempHome();
  });

  afterAll(async () => {
    await telegram?.close();
    removeHome(home);
  });

  it("asks for the token, the allowlist and a confirmation, refusing an @name until an id is given", async () => {
    const spar = [
      process.execPath,
      SPAR_BIN,
      "channel",
      "setup",
      "telegram",
      "--api-root",
      telegram.url,
      "--tunnel",
      "manual",
      "--url",
      "http://127.0.0.1:1",
    ]
      .map((word) => `'${word}'`)
      .join(" ");
    // util-linux `script` runs the command on a pseudo-terminal: stdin and stdout are TTYs. The
    // terminal gets a size first (a new one has none, and the wizard would wrap every character).
    const child = spawn("script", ["-qfec", `stty cols 150 rows 40; exec ${spar}`, "/dev/null"], {
      env: { ...process.env, SPAR_HOME: home, TERM: "xterm" },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let screen = "";
    const seen: ((text: string) => void)[] = [];
    const onData = (data: Buffer) => {
      screen += data.toString();
      for (const wake of seen.splice(0)) wake(screen);
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
    /** Waits until the screen shows `text` after position `from`; returns the position after it. */
    const waitFor = async (text: string, from: number): Promise<number> => {
      for (;;) {
        const at = screen.indexOf(text, from);
        if (at >= 0) return at + text.length;
        await Promise.race([new Promise((r) => seen.push(r)), exited]);
        if (child.exitCode !== null && !screen.includes(text, from)) {
          throw new Error(`the wizard ended before showing "${text}":\n${screen}`);
        }
      }
    };

    let at = await waitFor("The bot token", 0);
    child.stdin.write(`${telegram.token}\r`);
    at = await waitFor("Who may talk to the bot?", at);
    child.stdin.write("@someone\r");
    at = await waitFor('"@someone" is a username', at);
    at = await waitFor("message @userinfobot", at);
    // Clear the refused answer, then give an id.
    child.stdin.write(`${"\x7f".repeat(20)}424242\r`);
    at = await waitFor("Save this?", at);
    child.stdin.write("\r");
    await waitFor("Telegram is set up", at);
    expect(await exited).toBe(0);

    expect(screen).toContain(`bot @${FAKE_BOT.username}`);
    expect(screen).not.toContain(telegram.token);
    expect(dotEnv(home).TELEGRAM_BOT_TOKEN).toBe(telegram.token);
    expect(screen).not.toContain(dotEnv(home).TELEGRAM_WEBHOOK_SECRET);
    expect(channelTable(home, "telegram")).toMatchObject({ allowlist: [424242], api_root: telegram.url });
    expect(telegram.webhook()).toMatchObject({
      url: "http://127.0.0.1:1/telegram",
      secret_token: dotEnv(home).TELEGRAM_WEBHOOK_SECRET,
    });
    // The first setup made the data dir as spar init does.
    expect(config(home).default_model).toBeDefined();
  });
});
