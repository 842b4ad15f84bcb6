/**
 * The channel contract: every channel plugin, through the real daemon and its webhook listener (a
 * manual tunnel pointing at it), against a fake of its platform that the real library talks to, with
 * the fake OpenAI server as the fighter's model. A platform passes when an allowed sender's message
 * comes back as the fighter's reply in the same chat, and nobody else gets a model call.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  allowUnasked,
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";
import { createDriver as discord } from "./channels/discord.js";
import type { ChannelDriver } from "./channels/driver.js";
import { createDriver as slack } from "./channels/slack.js";
import { createDriver as telegram } from "./channels/telegram.js";

const ALLOWED = { telegram: "424242", discord: "300000000000000001", slack: "U0ALLOWED1" };
const STRANGER = { telegram: "777", discord: "300000000000000009", slack: "U0STRANGER" };

/** Waits until `test` holds, polling (no timing is asserted). */
async function until<T>(probe: () => T, test: (value: T) => boolean, what: string): Promise<T> {
  for (let i = 0; i < 200; i++) {
    const value = probe();
    if (test(value)) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe.each([telegram, slack, discord].map((make) => [make().platform, make] as const))(
  "channel contract: %s",
  (platform, make) => {
    let driver: ChannelDriver;
    let fake: FakeOpenAI;
    let home: string;
    let daemon: TestDaemon;
    let webhookPort: number;
    const allowed = ALLOWED[platform];
    const stranger = STRANGER[platform];
    let next = 0;
    const chatOf = (name: string) => `${platform === "telegram" ? "-100" : "C"}${name}`;
    const calls = () => fake.calls().length;

    beforeAll(async () => {
      fake = await startFakeOpenAI();
      driver = make();
      const { toml, env } = await driver.start({ allowed, fighter: "spar" });
      home = tempHome();
      const port = await freePort();
      webhookPort = await freePort();
      writeConfig(
        home,
        port,
        fake.url,
        `\n[creed]\nreflect = false\n\n[channels]\nwebhook_listen = "127.0.0.1:${webhookPort}"\n\n${toml}\n\n` +
          `[tunnel]\nmode = "manual"\nurl = "http://127.0.0.1:${webhookPort}"\n` +
          // channel_notify to a chat it never posted to asks first; this suite tests the channel.
          allowUnasked(["channel_notify"]),
      );
      daemon = await startDaemon(home, port, env);
      await driver.ready({ tunnelUrl: `http://127.0.0.1:${webhookPort}` });
    }, 60_000);

    afterAll(async () => {
      await daemon?.stop();
      await driver?.close();
      await fake?.close();
      removeHome(home);
    });

    it("registers its webhook at the tunnel's URL, on the webhook listener", () => {
      const url = driver.registeredUrl();
      if (url === undefined) return; // a gateway-only platform registers nothing
      expect(url.startsWith(`http://127.0.0.1:${webhookPort}/`)).toBe(true);
    });

    it("answers an allowed sender in the same chat, with typing shown and the sender remembered", async () => {
      const before = driver.posted().length;
      const status = await driver.deliver({
        sender: allowed,
        chat: chatOf("round"),
        text: "hello from the platform",
      });
      if (status !== undefined) expect(status).toBe(200);
      const posted = await until(driver.posted, (p) => p.length > before, "the reply");
      expect(posted[before]).toEqual({ chat: chatOf("round"), text: "echo: hello from the platform" });
      expect(driver.typing()).toBeGreaterThan(0);
      const relationships = await daemon.request<{ relationships: { with: string; kind: string }[] }>(
        "GET",
        "/api/v1/fighters/spar/relationships",
      );
      expect(relationships.body.relationships).toContainEqual(
        expect.objectContaining({ with: `${platform}:${allowed}`, kind: "user" }),
      );
    });

    it("keeps one conversation per chat: a chat never sees another's messages", async () => {
      const before = driver.posted().length;
      const say = async (chat: string, text: string, count: number) => {
        await driver.deliver({ sender: allowed, chat: chatOf(chat), text });
        await until(driver.posted, (p) => p.length >= before + count, `reply ${count}`);
      };
      await say("alpha", "alpha's secret plan", 1);
      await say("beta", "beta's question", 2);
      await say("alpha", "what did I say?", 3);
      const last =
        fake.requests
          .at(-1)
          ?.body?.messages.map((m) => JSON.stringify(m.content))
          .join("\n") ?? "";
      expect(last).toContain("alpha's secret plan");
      expect(last).not.toContain("beta's question");
    });

    it("gives a sender not on the allowlist no model call and no reply", async () => {
      const [before, posted] = [calls(), driver.posted().length];
      const status = await driver.deliver({ sender: stranger, chat: chatOf("intruder"), text: "let me in" });
      if (status !== undefined) expect(status).toBe(403);
      // A later allowed message is answered, so the stranger's would have been by now.
      await driver.deliver({ sender: allowed, chat: chatOf("after-intruder"), text: "still there?" });
      const replies = await until(driver.posted, (p) => p.length > posted, "the allowed reply");
      expect(replies.slice(posted).map((p) => p.chat)).toEqual([chatOf("after-intruder")]);
      expect(calls()).toBe(before + 1);
      expect(fake.calls().some((c) => c.last_user_text.includes("let me in"))).toBe(false);
    });

    it("refuses a forged delivery with 401: no parse, no model call, no reply", async () => {
      if (!driver.signed) return;
      const [before, posted] = [calls(), driver.posted().length];
      const status = await driver.deliver({
        sender: allowed,
        chat: chatOf("forged"),
        text: "forged order",
        forge: true,
      });
      expect(status).toBe(401);
      await driver.deliver({ sender: allowed, chat: chatOf("after-forged"), text: "genuine" });
      await until(driver.posted, (p) => p.length > posted, "the genuine reply");
      expect(calls()).toBe(before + 1);
      expect(driver.posted().some((p) => p.chat === chatOf("forged"))).toBe(false);
    });

    it("processes a replayed delivery once", async () => {
      const id = `replay-${++next}`;
      const [before, posted] = [calls(), driver.posted().length];
      await driver.deliver({ sender: allowed, chat: chatOf("replay"), text: "only once please", id });
      await until(driver.posted, (p) => p.length > posted, "the first reply");
      const again = await driver.deliver({
        sender: allowed,
        chat: chatOf("replay"),
        text: "only once please",
        id,
      });
      if (again !== undefined) expect(again).toBe(200);
      await driver.deliver({ sender: allowed, chat: chatOf("after-replay"), text: "next" });
      await until(driver.posted, (p) => p.length > posted + 1, "the next reply");
      expect(calls()).toBe(before + 2);
      expect(driver.posted().filter((p) => p.chat === chatOf("replay"))).toHaveLength(1);
    });

    it("splits a long reply to the platform's limit, losing nothing", async () => {
      const words = Array.from({ length: Math.ceil((driver.limit * 2.5) / 8) }, (_, i) => `word${i % 1000}`);
      const long = words.join(" ");
      fake.enqueue({ text: long });
      const posted = driver.posted().length;
      await driver.deliver({ sender: allowed, chat: chatOf("long"), text: "tell me everything" });
      const all = await until(
        driver.posted,
        (p) =>
          p
            .slice(posted)
            .map((m) => m.text)
            .join(" ").length >= long.length,
        "every part",
      );
      const parts = all.slice(posted).filter((p) => p.chat === chatOf("long"));
      expect(parts.length).toBeGreaterThanOrEqual(3);
      for (const part of parts) expect(part.text.length).toBeLessThanOrEqual(driver.limit);
      expect(parts.map((p) => p.text).join(" ")).toBe(long);
    });

    it("lets a fighter holding channel_notify post to a chat, and no other fighter", async () => {
      const spawn = async (
        name: string,
        capabilities: { type: string; scope?: string; targets?: string[] }[],
      ) =>
        daemon.request("POST", "/api/v1/fighters", {
          manifest: { name, description: name, system_prompt: `You are ${name}.`, capabilities },
        });
      const chat = driver.chat?.(chatOf("news")) ?? chatOf("news");
      const herald = [{ type: "channel_notify", scope: platform, targets: [`${platform}:${chat}`] }];
      expect((await spawn("herald", herald)).status).toBe(201);
      expect((await spawn("mute", [{ type: "memory" }])).status).toBe(201);
      const call = {
        name: "channel_notify",
        arguments: { platform, chat, text: "the build is green" },
      };
      const posted = driver.posted().length;
      fake.enqueue({ tool_calls: [call] });
      const told = await daemon.request("POST", "/api/v1/fighters/herald/message", {
        message: "announce it",
      });
      expect(told.status).toBe(200);
      expect(driver.posted().slice(posted)).toContainEqual({
        chat: chatOf("news"),
        text: "the build is green",
      });
      fake.enqueue({ tool_calls: [call] });
      const refused = await daemon.request("POST", "/api/v1/fighters/mute/message", {
        message: "announce it",
      });
      expect(refused.status).toBe(200);
      expect(fake.calls().at(-1)?.tool_results.at(-1)).toContain("CAPABILITY_DENIED");
      // A chat neither named by the grant nor written to it from: refused too.
      const elsewhere = driver.chat?.(chatOf("elsewhere")) ?? chatOf("elsewhere");
      fake.enqueue({
        tool_calls: [{ ...call, arguments: { platform, chat: elsewhere, text: "elsewhere" } }],
      });
      await daemon.request("POST", "/api/v1/fighters/herald/message", { message: "announce it there" });
      expect(fake.calls().at(-1)?.tool_results.at(-1)).toContain("is not a chat this fighter may post to");
      expect(driver.posted().filter((p) => p.text === "the build is green")).toHaveLength(1);
      expect(driver.posted().filter((p) => p.text === "elsewhere")).toEqual([]);
    });

    it("reports its state to spar channel status", async () => {
      const res = await daemon.request<{
        platform: string;
        connected: boolean;
        inbound: number;
        refused: { signature: number; allowlist: number };
        fighter: string;
      }>("GET", `/api/v1/channels/${platform}`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ platform, connected: true, fighter: "spar" });
      expect(res.body.inbound).toBeGreaterThan(0);
      expect(res.body.refused.allowlist).toBeGreaterThan(0);
      if (driver.signed) expect(res.body.refused.signature).toBeGreaterThan(0);
      const status = await daemon.cli(["channel", "status", platform]);
      expect(status.code, status.stderr).toBe(0);
      expect(status.stdout).toContain(platform);
    });
  },
);
