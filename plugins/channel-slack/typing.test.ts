/**
 * The ⏳ reaction as Slack's typing indicator, through web-api against the fake Slack: added once
 * per message however often the relay asks, removed after the turn, and a failure to add it neither
 * breaks the turn nor leads to a removal.
 */
import type { webApi } from "@slack/bolt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeSlack, startFakeSlack } from "../../test/fakes/slack-server.js";
import { createSlackBolt } from "./bolt.js";
import { createReactionTyping, WORKING_REACTION } from "./typing.js";

let slack: FakeSlack;
const warnings: string[] = [];
const log = { info: () => undefined, warn: (m: string) => void warnings.push(m), error: () => undefined };

/** The plugin's bolt client for `token`, talking to the fake. */
function client(token: string): webApi.WebClient {
  return createSlackBolt({ token, apiRoot: slack.url, log, onMessage: async () => undefined }).client;
}

beforeAll(async () => {
  slack = await startFakeSlack();
});
afterAll(async () => {
  await slack.close();
});

describe("reaction typing", () => {
  it("adds the reaction once per message, however often typing is asked, and removes it after", async () => {
    const typing = createReactionTyping(client(slack.token), log);
    const before = slack.reactions();
    let during: ReturnType<FakeSlack["reactions"]> | undefined;
    await typing.around("C0TYPING01", "1700000000.000001", async () => {
      await typing.typing("C0TYPING01");
      await typing.typing("C0TYPING01");
      await typing.typing("C0TYPING01");
      during = slack.reactions();
    });
    expect(during?.added).toBe(before.added + 1);
    expect(during?.present).toContainEqual({
      channel: "C0TYPING01",
      timestamp: "1700000000.000001",
      name: WORKING_REACTION,
    });
    const after = slack.reactions();
    expect(after.removed).toBe(before.removed + 1);
    expect(after.present.some((r) => r.channel === "C0TYPING01")).toBe(false);
  });

  it("reacts to each waiting message of the chat asked about, and to no other chat's", async () => {
    const typing = createReactionTyping(client(slack.token), log);
    const before = slack.reactions().added;
    let release = () => {};
    const held = new Promise<void>((r) => {
      release = r;
    });
    const first = typing.around("C0BUSY0001", "1.000001", () => held);
    const second = typing.around("C0BUSY0001", "1.000002", () => held);
    const other = typing.around("C0QUIET001", "1.000003", () => held);
    await typing.typing("C0BUSY0001");
    const present = slack.reactions().present.map((r) => `${r.channel}/${r.timestamp}`);
    expect(present).toEqual(expect.arrayContaining(["C0BUSY0001/1.000001", "C0BUSY0001/1.000002"]));
    expect(present).not.toContain("C0QUIET001/1.000003");
    release();
    await Promise.all([first, second, other]);
    expect(slack.reactions().added).toBe(before + 2);
  });

  it("goes on without the reaction when Slack refuses it, warning once and removing nothing", async () => {
    const typing = createReactionTyping(client("xoxb-not-the-token"), log);
    const [before, removed] = [warnings.length, slack.reactions().removed];
    let ran = 0;
    for (const ts of ["2.000001", "2.000002"]) {
      await typing.around("C0NOSCOPE1", ts, async () => {
        await typing.typing("C0NOSCOPE1");
        ran += 1;
      });
    }
    expect(ran).toBe(2);
    expect(warnings.slice(before)).toEqual([expect.stringContaining("reactions:write")]);
    expect(slack.reactions().removed).toBe(removed);
    const calls = slack.calls().filter((c) => c.params.channel === "C0NOSCOPE1");
    expect(calls.map((c) => [c.method, c.authorized])).toEqual([
      ["reactions.add", false],
      ["reactions.add", false],
    ]);
  });

  it("passes the turn's failure on, with the reaction removed all the same", async () => {
    const typing = createReactionTyping(client(slack.token), log);
    await expect(
      typing.around("C0FAILING1", "3.000001", async () => {
        await typing.typing("C0FAILING1");
        throw new Error("turn broke");
      }),
    ).rejects.toThrow("turn broke");
    expect(slack.reactions().present.some((r) => r.channel === "C0FAILING1")).toBe(false);
  });
});
