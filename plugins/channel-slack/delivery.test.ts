/**
 * Reading Events API bodies: the challenge, a member's plain message, and everything the channel
 * must leave alone (the bot's own posts, edits, other events), with malformed envelopes refused.
 */
import { describe, expect, it } from "vitest";
import { readDelivery } from "./delivery.js";

const envelope = (event: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  type: "event_callback",
  event_id: "Ev0SPAR0001",
  team_id: "T0SPARTEAM",
  event,
  ...extra,
});
const plain = {
  type: "message",
  channel: "C0GENERAL1",
  user: "U0ALICE001",
  text: "hi",
  ts: "1700000000.000100",
};

describe("readDelivery", () => {
  it("answers url_verification with its challenge", () => {
    expect(readDelivery({ type: "url_verification", token: "t", challenge: "abc123" })).toEqual({
      kind: "challenge",
      challenge: "abc123",
    });
  });

  it("reads a member's plain message with its event id", () => {
    const body = envelope(plain);
    expect(readDelivery(body)).toEqual({
      kind: "message",
      eventId: "Ev0SPAR0001",
      sender: "U0ALICE001",
      chat: "C0GENERAL1",
      text: "hi",
      envelope: body,
    });
  });

  it.each([
    ["the bot's own post", { ...plain, bot_id: "B0SPARBOT1" }, "a bot's message"],
    [
      "a bot_message",
      { ...plain, subtype: "bot_message", bot_id: "B0OTHER001" },
      "message subtype bot_message",
    ],
    [
      "an edit",
      {
        type: "message",
        subtype: "message_changed",
        channel: "C0GENERAL1",
        message: { ...plain, text: "hi!" },
        ts: "1",
      },
      "message subtype message_changed",
    ],
    [
      "a deletion",
      { type: "message", subtype: "message_deleted", channel: "C0GENERAL1", ts: "1" },
      "message subtype message_deleted",
    ],
    ["a reaction", { type: "reaction_added", user: "U0ALICE001" }, "event reaction_added"],
    ["a blank message", { ...plain, text: "   " }, "a message without text"],
  ])("leaves %s alone", (_, event, reason) => {
    expect(readDelivery(envelope(event))).toEqual({ kind: "ignored", reason });
  });

  it("leaves other envelopes alone", () => {
    expect(readDelivery({ type: "app_rate_limited", minute_rate_limited: 1 })).toEqual({
      kind: "ignored",
      reason: "envelope app_rate_limited",
    });
  });

  it.each([
    ["a body that is not an object", "hello"],
    ["an array", [plain]],
    ["a challenge without its value", { type: "url_verification" }],
    ["an event_callback without event_id", { type: "event_callback", event: plain }],
    ["an event_callback without event", { type: "event_callback", event_id: "Ev1" }],
    ["a message without a user", envelope({ ...plain, user: undefined })],
    ["a message without a channel", envelope({ ...plain, channel: 42 })],
  ])("refuses %s with VALIDATION_FAILED", (_, body) => {
    expect(() => readDelivery(body)).toThrow(expect.objectContaining({ code: "VALIDATION_FAILED" }));
  });
});
