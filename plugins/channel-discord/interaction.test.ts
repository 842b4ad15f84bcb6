import { describe, expect, it } from "vitest";
import { isSparError } from "../../sdk/index.js";
import { ASK_COMMAND, ephemeral, readInteraction } from "./interaction.js";

const USER = "300000000000000001";
const CHANNEL = "400000000000000002";

/** An `/ask` as Discord sends it from a guild channel. */
function guildAsk(overrides: Record<string, unknown> = {}) {
  return {
    id: "500000000000000003",
    application_id: "600000000000000004",
    type: 2,
    token: "aW50ZXJhY3Rpb24.abc-DEF_123",
    version: 1,
    data: {
      id: "700000000000000005",
      name: "ask",
      type: 1,
      options: [{ type: 3, name: "prompt", value: "hi" }],
    },
    guild_id: "800000000000000006",
    channel_id: CHANNEL,
    channel: { id: CHANNEL, type: 0 },
    member: { user: { id: USER, username: "someone" }, roles: [] },
    ...overrides,
  };
}

function refusal(body: unknown): string {
  try {
    readInteraction(body);
  } catch (err) {
    if (isSparError(err, "VALIDATION_FAILED")) return err.message;
    throw err;
  }
  throw new Error("accepted");
}

describe("readInteraction", () => {
  it("reads a PING", () => {
    expect(readInteraction({ id: "1", type: 1, token: "t", application_id: "2" })).toEqual({ kind: "ping" });
  });

  it("reads /ask from a guild: the member's user, the channel, the prompt, and the follow-up address", () => {
    expect(readInteraction(guildAsk())).toEqual({
      kind: "ask",
      id: "500000000000000003",
      applicationId: "600000000000000004",
      token: "aW50ZXJhY3Rpb24.abc-DEF_123",
      chat: CHANNEL,
      sender: USER,
      prompt: "hi",
    });
  });

  it("reads /ask from a DM, where the user is given directly", () => {
    const dm = guildAsk({
      member: undefined,
      guild_id: undefined,
      user: { id: USER },
      channel: { id: CHANNEL, type: 1 },
    });
    expect(readInteraction(dm)).toMatchObject({ kind: "ask", sender: USER, chat: CHANNEL });
  });

  it("falls back to channel_id when the channel object is absent", () => {
    expect(readInteraction(guildAsk({ channel: undefined }))).toMatchObject({ chat: CHANNEL });
  });

  it("refuses what this bot never registered, saying what it has", () => {
    expect(refusal(guildAsk({ type: 3 }))).toMatch(/type 3 .*only the \/ask command/);
    expect(refusal(guildAsk({ data: { name: "ban", type: 1 } }))).toMatch(/unknown command "ban"/);
    expect(refusal([])).toMatch(/JSON object/);
  });

  it("refuses an /ask without a usable prompt, user, channel, id or token", () => {
    const data = (options: unknown) => ({ data: { name: "ask", type: 1, options } });
    expect(refusal(guildAsk(data([])))).toMatch(/prompt/);
    expect(refusal(guildAsk(data([{ type: 3, name: "prompt", value: "  " }])))).toMatch(/prompt/);
    expect(refusal(guildAsk(data([{ type: 4, name: "prompt", value: 3 }])))).toMatch(/prompt/);
    expect(refusal(guildAsk({ member: { user: { id: "someone" } } }))).toMatch(/user id/);
    expect(refusal(guildAsk({ member: undefined }))).toMatch(/user id/);
    expect(refusal(guildAsk({ channel: undefined, channel_id: undefined }))).toMatch(/channel id/);
    expect(refusal(guildAsk({ id: 5 }))).toMatch(/id is not/);
    expect(refusal(guildAsk({ token: "../../channels/1/messages" }))).toMatch(/token/);
  });
});

describe("a button press", () => {
  const press = (data: Record<string, unknown>) =>
    guildAsk({
      type: 3,
      data,
      message: { id: "900000000000000007", channel_id: CHANNEL, content: "Approval needed" },
    });

  it("reads a press of an approval button: the channel, the presser, the message and the custom_id", () => {
    expect(readInteraction(press({ custom_id: "spar:d:abc", component_type: 2 }))).toEqual({
      kind: "press",
      id: "500000000000000003",
      chat: CHANNEL,
      sender: USER,
      message_id: "900000000000000007",
      content: "Approval needed",
      custom_id: "spar:d:abc",
    });
  });

  it("refuses any other component", () => {
    expect(refusal(press({ custom_id: "other", component_type: 2 }))).toMatch(/type 3 other than/);
    expect(refusal(press({ custom_id: "spar:a:abc", component_type: 3 }))).toMatch(/type 3 other than/);
  });
});

describe("the command and the answers", () => {
  it("registers /ask with one required string option, prompt", () => {
    expect(ASK_COMMAND.options).toEqual([
      expect.objectContaining({ type: 3, name: "prompt", required: true }),
    ]);
  });

  it("makes ephemeral notes that ping nobody", () => {
    expect(ephemeral("hello @everyone")).toEqual({
      type: 4,
      data: { content: "hello @everyone", flags: 64, allowed_mentions: { parse: [] } },
    });
  });
});
