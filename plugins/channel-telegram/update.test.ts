import { describe, expect, it } from "vitest";
import { isSparError } from "../../sdk/index.js";
import { readUpdate } from "./update.js";

const message = (over: Record<string, unknown> = {}) => ({
  message_id: 9,
  date: 1_700_000_000,
  from: { id: 424242, is_bot: false, first_name: "Ada" },
  chat: { id: -1001234567890, type: "supergroup", title: "Team" },
  text: "hello",
  ...over,
});

describe("channel-telegram update reading", () => {
  it("reads a text message: update id, sender and chat as strings, the text", () => {
    expect(readUpdate({ update_id: 77, message: message() })).toEqual({
      kind: "text",
      update_id: 77,
      sender: "424242",
      chat: "-1001234567890",
      text: "hello",
      date: 1_700_000_000,
    });
    // The date is the only time a webhook delivery carries: without one there is no window to check.
    expect(readUpdate({ update_id: 78, message: message({ date: undefined }) })).toEqual({
      kind: "ignored",
      update_id: 78,
      reason: "no date",
    });
  });

  it("ignores what is not a text message from a person", () => {
    const cases: [unknown, string][] = [
      [{ update_id: 1, edited_message: message() }, "not a message"],
      [
        { update_id: 2, message: message({ text: undefined, photo: [{ file_id: "x" }] }) },
        "not a text message",
      ],
      [{ update_id: 3, message: message({ text: "   " }) }, "not a text message"],
      [{ update_id: 4, message: message({ from: undefined }) }, "no sender"],
      [
        { update_id: 5, message: message({ from: { id: 1, is_bot: true, first_name: "b" } }) },
        "sent by a bot",
      ],
      [{ update_id: 6, message: message({ chat: { id: 1.5 } }) }, "no chat"],
    ];
    for (const [body, reason] of cases) {
      expect(readUpdate(body)).toMatchObject({ kind: "ignored", reason });
    }
  });

  it("refuses a body that is not an Update with VALIDATION_FAILED", () => {
    for (const body of [
      undefined,
      "text",
      [],
      { message: message() },
      { update_id: "7", message: message() },
    ]) {
      let caught: unknown;
      try {
        readUpdate(body);
      } catch (err) {
        caught = err;
      }
      expect(isSparError(caught, "VALIDATION_FAILED")).toBe(true);
    }
  });

  it("reads a press of an inline button (callback_query): the query id, sender, chat, message and data", () => {
    const press = {
      id: "4382bfdwdsb323b2d9",
      from: { id: 424242, is_bot: false, first_name: "Ada" },
      message: {
        message_id: 12,
        date: 1_700_000_000,
        chat: { id: 424242, type: "private" },
        text: "Approval needed",
      },
      chat_instance: "1",
      data: "spar:a:abc",
    };
    expect(readUpdate({ update_id: 90, callback_query: press })).toEqual({
      kind: "press",
      update_id: 90,
      callback_id: "4382bfdwdsb323b2d9",
      sender: "424242",
      chat: "424242",
      message_id: 12,
      text: "Approval needed",
      data: "spar:a:abc",
    });
    expect(readUpdate({ update_id: 91, callback_query: { ...press, message: undefined } })).toMatchObject({
      kind: "ignored",
      reason: "a press on no message",
    });
    expect(readUpdate({ update_id: 92, callback_query: { ...press, data: undefined } })).toMatchObject({
      kind: "ignored",
    });
  });
});
