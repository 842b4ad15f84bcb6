/**
 * The tunnel (plugins/tunnel-cloudflared) in the real daemon, with the fake cloudflared
 * (test/fixtures/cloudflared/cloudflared) as `[tunnel] cloudflared`: `GET /api/v1/tunnel` opens a
 * quick tunnel pointing at the webhook listener and answers its trycloudflare URL, a named tunnel
 * answers its hostname, a manual one its URL with nothing started; cloudflared gets none of the
 * daemon's secrets and is gone once the daemon stops; a missing cloudflared is a 503
 * TUNNEL_UNAVAILABLE with its reason, shown by `spar channel tunnel`, while the daemon keeps running; a cloudflared that dies is shown; a manual tunnel without its URL
 * stops the daemon at start.
 */
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";

const FAKE_CLOUDFLARED = resolve(import.meta.dirname, "..", "fixtures", "cloudflared", "cloudflared");

interface Tunnel {
  url: string;
  mode: string;
  error?: string;
}

interface Recorded {
  pid: number;
  args: string[];
  env: string[];
}

let fake: FakeOpenAI | undefined;
const daemons: TestDaemon[] = [];
const dirs: string[] = [];

afterEach(async () => {
  await Promise.all(daemons.splice(0).map((d) => d.stop()));
  for (const dir of dirs.splice(0)) removeHome(dir);
});

afterAll(async () => {
  await fake?.close();
});

/** A daemon whose `[tunnel]` table is `tunnel`, with the fake cloudflared recording its starts. */
async function daemonWith(tunnel: string, behaviour = "") {
  fake ??= await startFakeOpenAI();
  const home = tempHome();
  const scratch = mkdtempSync(join(tmpdir(), "spar-tunnel-"));
  dirs.push(home, scratch);
  const port = await freePort();
  const webhookPort = await freePort();
  writeConfig(
    home,
    port,
    fake.url,
    `\n[channels]\nwebhook_listen = "127.0.0.1:${webhookPort}"\n\n[tunnel]\n${tunnel}\n`,
  );
  const record = join(scratch, "cloudflared.jsonl");
  const daemon = await startDaemon(home, port, {
    CLOUDFLARED_FAKE_RECORD: record,
    CLOUDFLARED_FAKE_BEHAVIOUR: behaviour,
    TELEGRAM_BOT_TOKEN: "123456:never-for-cloudflared",
  });
  daemons.push(daemon);
  const recorded = (): Recorded[] =>
    existsSync(record)
      ? readFileSync(record, "utf8")
          .trim()
          .split("\n")
          .map((line) => JSON.parse(line) as Recorded)
      : [];
  return { daemon, webhookPort, recorded, home };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("the tunnel", () => {
  it("opens a quick tunnel to the webhook listener, once, and stops cloudflared with the daemon", async () => {
    const { daemon, webhookPort, recorded } = await daemonWith(`cloudflared = "${FAKE_CLOUDFLARED}"`);
    const opened = await daemon.request<Tunnel>("GET", "/api/v1/tunnel");
    expect(opened.status).toBe(200);
    expect(opened.body.mode).toBe("quick");
    expect(opened.body.url).toMatch(/^https:\/\/[a-z0-9]+(-[a-z0-9]+)+\.trycloudflare\.com$/);
    expect(opened.body.error).toBeUndefined();

    const [started, ...others] = recorded();
    expect(others).toEqual([]);
    expect(started?.args).toEqual(["tunnel", "--no-autoupdate", "--url", `http://127.0.0.1:${webhookPort}`]);
    // The daemon's keys and tokens stay in the daemon.
    for (const secret of ["OPENAI_API_KEY", "TELEGRAM_BOT_TOKEN", "SPAR_HOME"]) {
      expect(started?.env).not.toContain(secret);
    }
    expect(daemon.output()).toContain(opened.body.url);
    expect(daemon.output()).not.toContain("never-for-cloudflared");

    // Asked again: the same tunnel, no second cloudflared.
    const again = await daemon.request<Tunnel>("GET", "/api/v1/tunnel");
    expect(again.body.url).toBe(opened.body.url);
    expect(recorded()).toHaveLength(1);

    const pid = started?.pid as number;
    expect(alive(pid)).toBe(true);
    expect(await daemon.stop()).toBe(0);
    for (let i = 0; i < 100 && alive(pid); i++) await new Promise((r) => setTimeout(r, 50));
    expect(alive(pid)).toBe(false);
  });

  it("runs a named tunnel and answers its hostname", async () => {
    const { daemon, webhookPort, recorded } = await daemonWith(
      `mode = "named"\nname = "spar-bots"\nhostname = "bots.example.com"\ncloudflared = "${FAKE_CLOUDFLARED}"`,
    );
    const opened = await daemon.request<Tunnel>("GET", "/api/v1/tunnel");
    expect(opened.status).toBe(200);
    expect(opened.body).toEqual({ url: "https://bots.example.com", mode: "named" });
    expect(recorded()[0]?.args).toEqual([
      "tunnel",
      "--no-autoupdate",
      "run",
      "--url",
      `http://127.0.0.1:${webhookPort}`,
      "spar-bots",
    ]);
  });

  it("answers a manual tunnel's URL without starting anything", async () => {
    const { daemon, recorded } = await daemonWith(
      `mode = "manual"\nurl = "https://bots.example.com/spar/"\ncloudflared = "${FAKE_CLOUDFLARED}"`,
    );
    const opened = await daemon.request<Tunnel>("GET", "/api/v1/tunnel");
    expect(opened.status).toBe(200);
    expect(opened.body).toEqual({ url: "https://bots.example.com/spar", mode: "manual" });
    expect(recorded()).toEqual([]);
  });

  it("says how to install cloudflared when it is missing, and the daemon keeps running", async () => {
    const { daemon } = await daemonWith(`cloudflared = "/nonexistent/bin/cloudflared"`);
    const advice =
      "cloudflared is not installed (/nonexistent/bin/cloudflared was not found): install it from " +
      "https://developers.cloudflare.com/cloudflare-one/connections/connect-networks/downloads/ " +
      '(Debian: the cloudflare apt repository), or set [tunnel] mode = "manual" with the URL of your own reverse proxy';
    for (let attempt = 0; attempt < 2; attempt++) {
      const refused = await daemon.request<{ error: Record<string, string> }>("GET", "/api/v1/tunnel");
      // The tunnel is unavailable, not the daemon broken: a 503 with a reason a client can rely on.
      expect(refused.status).toBe(503);
      expect(refused.body.error).toMatchObject({
        code: "TUNNEL_UNAVAILABLE",
        reason: "cloudflared_not_installed",
        mode: "quick",
        install: "https://developers.cloudflare.com/cloudflare-one/connections/connect-networks/downloads/",
      });
      expect(refused.body.error.message).toContain(advice);
    }
    const shown = await daemon.cli(["channel", "tunnel"]);
    expect(shown.code).toBe(1);
    expect(shown.stderr).toContain(advice);
    expect(shown.stderr).toContain("(TUNNEL_UNAVAILABLE)");
    const status = await daemon.request<{ status: string }>("GET", "/api/v1/status");
    expect(status.status).toBe(200);
    expect(status.body.status).toBe("ok");
  });

  it("shows that the tunnel is down when cloudflared dies", async () => {
    const { daemon } = await daemonWith(`cloudflared = "${FAKE_CLOUDFLARED}"`, "exit-later");
    const opened = await daemon.request<Tunnel>("GET", "/api/v1/tunnel");
    expect(opened.status).toBe(200);
    let shown = opened.body;
    for (let i = 0; i < 200 && !shown.error; i++) {
      await new Promise((r) => setTimeout(r, 50));
      shown = (await daemon.request<Tunnel>("GET", "/api/v1/tunnel")).body;
    }
    expect(shown.url).toBe(opened.body.url);
    expect(shown.error).toBe(
      `cloudflared stopped (exit code 1): ${opened.body.url} no longer reaches this daemon; restart the daemon to open the tunnel again`,
    );
    expect(daemon.output()).toContain("the tunnel is down: cloudflared stopped");
  });

  it("refuses to start with a manual tunnel that has no URL", async () => {
    fake ??= await startFakeOpenAI();
    const home = tempHome();
    dirs.push(home);
    const port = await freePort();
    writeConfig(home, port, fake.url, '\n[tunnel]\nmode = "manual"\n');
    await expect(startDaemon(home, port)).rejects.toThrow(/missing required key "tunnel\.url"/);
  });
});
