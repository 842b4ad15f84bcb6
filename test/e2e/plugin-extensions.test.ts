import { createHmac } from "node:crypto";
import { cpSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import type { FighterMessageResult } from "../../sdk/index.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  freePort,
  removeHome,
  runCli,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";

const EXAMPLE = join(import.meta.dirname, "..", "..", "examples", "plugins", "moves-dice");
const SECRET = "dice-webhook-secret-for-tests";

/**
 * The shipped example plugin, installed from its folder into a data dir as a user would, exercises
 * every extension point end to end: its config table, an API route, a webhook route on the webhook
 * listener, a run-time move behind a capability of its own, the fighter's workspace, and its event kind.
 */
describe("a user plugin written against spar/sdk", () => {
  let fake: FakeOpenAI;
  let home: string;
  let daemon: TestDaemon;
  let webhookPort: number;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    const port = await freePort();
    webhookPort = await freePort();
    writeConfig(
      home,
      port,
      fake.url,
      // A [plugins] entry naming an installed plugin is taken.
      `\n[plugins]\ndisable = ["moves-desktop"]\n` +
        `\n[channels]\nwebhook_listen = "127.0.0.1:${webhookPort}"\n\n["moves-dice"]\nmax_dice = 50\npresets.d20 = { n = 1, sides = 20 }\n`,
    );
    cpSync(EXAMPLE, join(home, "plugins", "moves-dice"), { recursive: true });
    daemon = await startDaemon(home, port, { DICE_WEBHOOK_SECRET: SECRET });
  });

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    removeHome(home);
  });

  it("has its config table checked before its code loads", async () => {
    const other = tempHome();
    try {
      cpSync(EXAMPLE, join(other, "plugins", "moves-dice"), { recursive: true });
      writeConfig(other, await freePort(), fake.url, '\n["moves-dice"]\nmax_dice = "lots"\n');
      const start = await runCli(other, ["start"]);
      expect(start.code).not.toBe(0);
      expect(start.stderr).toMatch(/config\.toml: "moves-dice\.max_dice" must be integer/);
      writeConfig(other, await freePort(), fake.url, "\n[nobody]\nx = 1\n");
      expect((await runCli(other, ["start"])).stderr).toMatch(
        /unknown key "nobody" \(no installed plugin owns it\)/,
      );
    } finally {
      removeHome(other);
    }
  });

  it("serves its API route behind the API's authentication, also under /api", async () => {
    const stats = await daemon.request<{ rolls: number; presets: string[] }>("GET", "/api/v1/dice/stats");
    expect(stats.status).toBe(200);
    expect(stats.body.presets).toEqual(["dice_roll_d20"]);
    expect((await daemon.request("GET", "/api/dice/stats")).status).toBe(200);
    const proxied = await fetch(`${daemon.url}/api/v1/dice/stats`, {
      headers: { "x-forwarded-for": "1.2.3.4" },
    });
    expect(proxied.status).toBe(401);
    expect((await daemon.request("GET", "/api/v1/dice/nothing")).status).toBe(404);
  });

  it("offers its run-time move only to fighters granted its capability, and writes to their workspace", async () => {
    const spawned = await daemon.request("POST", "/api/v1/fighters", {
      manifest: {
        name: "gambler",
        description: "d",
        system_prompt: "You roll.",
        capabilities: [{ type: "dice" }],
      },
    });
    expect(spawned.status).toBe(201);
    const refused = await daemon.request<{ error: { message: string } }>("POST", "/api/v1/fighters", {
      manifest: { name: "bad", description: "d", system_prompt: "p", capabilities: [{ type: "lasers" }] },
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toMatch(/"lasers" is no capability .* known: .*dice/);
    await daemon.request("POST", "/api/v1/fighters", { template: "oracle" });

    const moves = await daemon.request<{ moves: { name: string; capability: string }[] }>(
      "GET",
      "/api/v1/moves",
    );
    expect(moves.body.moves).toContainEqual(
      expect.objectContaining({ name: "dice_roll_d20", capability: "dice" }),
    );

    fake.reset();
    fake.enqueue({ tool_calls: [{ name: "dice_roll_d20", arguments: {} }] });
    const reply = await daemon.request<FighterMessageResult>("POST", "/api/v1/fighters/gambler/message", {
      message: "roll for initiative",
    });
    expect(reply.body.tool_calls).toEqual([{ name: "dice_roll_d20", ok: true }]);
    expect(fake.calls()[0]?.tools.sort()).toEqual([
      "dice_roll",
      "dice_roll_d20",
      "skill_load",
      "skill_search",
    ]);
    const log = join(home, "workspaces", "gambler", "dice.log");
    expect(existsSync(log)).toBe(true);
    expect(readFileSync(log, "utf8")).toMatch(/^1d20: \d+\n$/);

    fake.reset();
    await daemon.request("POST", "/api/v1/fighters/oracle/message", { message: "hello" });
    expect(fake.calls()[0]?.tools).not.toContain("dice_roll_d20");
  });

  it("serves its webhook on the webhook listener only, which checks its signature, and publishes its event", async () => {
    const ws = new WebSocket(`${daemon.url.replace("http", "ws")}/api/v1/ws`);
    const rolled: { kind: string; by: string; total: number }[] = [];
    ws.on("message", (d) => {
      const frame = JSON.parse(String(d));
      if (frame.kind === "dice.rolled") rolled.push(frame);
    });
    await new Promise((r) => ws.once("open", r));
    ws.send(JSON.stringify({ type: "subscribe", kinds: ["dice.rolled"] }));
    await new Promise((r) => setTimeout(r, 50));

    const body = JSON.stringify({ n: 3, sides: 6 });
    const signature = `sha256=${createHmac("sha256", SECRET).update(body).digest("hex")}`;
    const hook = (headers: Record<string, string>, port = webhookPort) =>
      fetch(`http://127.0.0.1:${port}/dice/roll`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body,
      });
    const good = await hook({ "x-dice-signature": signature });
    expect(good.status).toBe(200);
    expect(((await good.json()) as { rolls: number[] }).rolls).toHaveLength(3);
    expect((await hook({ "x-dice-signature": "sha256=00" })).status).toBe(401);
    expect((await hook({})).status).toBe(401);
    // The signature is checked before the body is parsed: broken JSON with a bad signature is 401, not 400.
    const broken = await fetch(`http://127.0.0.1:${webhookPort}/dice/roll`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-dice-signature": "sha256=00" },
      body: '{"n": 3,',
    });
    expect(broken.status).toBe(401);
    // The API listener does not serve webhooks, and the webhook listener serves nothing else.
    expect((await hook({ "x-dice-signature": signature }, daemon.port)).status).toBe(404);
    expect((await fetch(`http://127.0.0.1:${webhookPort}/api/v1/fighters`)).status).toBe(404);

    await expect.poll(() => rolled.find((e) => e.by === "webhook")).toMatchObject({ kind: "dice.rolled" });
    ws.close();
  });
});

describe("[plugins] entries that name no installed plugin", () => {
  it("refuse to start, naming the key and the closest name, and spar doctor says the same", async () => {
    const home = tempHome();
    try {
      writeFileSync(join(home, "config.toml"), '[plugins]\nscheduler = "scheduler-cronr"\n');
      const slot = await runCli(home, ["start"]);
      expect(slot.code).toBe(1);
      expect(slot.stderr).toContain(
        '[plugins] scheduler = "scheduler-cronr" names no installed scheduler plugin; did you mean "scheduler-croner"? (installed: scheduler-bullmq, scheduler-croner)',
      );
      expect(slot.stderr).toContain("CONFIG_INVALID");
      writeFileSync(join(home, "config.toml"), '[plugins]\nbus = "moves-shell"\ndisable = ["moves-shel"]\n');
      const both = await runCli(home, ["start"]);
      expect(both.code).toBe(1);
      expect(both.stderr).toContain('[plugins] bus = "moves-shell" is a moves plugin, not a bus plugin');
      expect(both.stderr).toContain(
        '[plugins] disable lists "moves-shel", which names no installed plugin; did you mean "moves-shell"?',
      );
      const doctor = await runCli(home, ["doctor"]);
      expect(doctor.code).toBe(1);
      expect(doctor.stdout).toMatch(
        /^ {2}FAIL plugins: \[plugins\] bus = "moves-shell" is a moves plugin.*disable lists "moves-shel"/m,
      );
    } finally {
      removeHome(home);
    }
  });
});
