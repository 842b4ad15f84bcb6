/** The bout's history as the model sees it, built from stored messages and turns. */
import { describe, expect, it } from "vitest";
import { promptHistory } from "../../lib/turn-history.js";
import type { TurnRecord } from "../../sdk/store-types.js";
import type { ChatMessage, StoredMessage } from "../../sdk/types.js";

const BOUT = "bout-1";
let seq = 0;

/** A stored message of `turn`, with the store's bookkeeping fields. */
function stored(
  turn: string | undefined,
  message: ChatMessage,
  extra: Partial<StoredMessage> = {},
): StoredMessage {
  seq += 1;
  return {
    ...message,
    id: `m${seq}`,
    bout_id: BOUT,
    seq,
    created_at: new Date(seq * 1000).toISOString(),
    ...(turn ? { turn_id: turn } : {}),
    ...extra,
  } as StoredMessage;
}

function turn(id: string, status: TurnRecord["status"], error?: TurnRecord["error"]): TurnRecord {
  return {
    id,
    bout_id: BOUT,
    fighter_id: "f1",
    status,
    ...(error ? { error } : {}),
    started_at: new Date(0).toISOString(),
    usage: { input_tokens: 0, output_tokens: 0 },
    iterations: 1,
  };
}

const user = (content: string): ChatMessage => ({ role: "user", content });
const answer = (content: string): ChatMessage => ({ role: "assistant", content });
const asking = (...ids: string[]): ChatMessage => ({
  role: "assistant",
  content: "",
  tool_calls: ids.map((id) => ({ id, name: "note", arguments: { id } })),
});
const result = (id: string, content = `ran ${id}`): ChatMessage => ({
  role: "tool",
  tool_call_id: id,
  name: "note",
  content,
});

describe("prompt history", () => {
  it("passes completed turns through as plain chat messages, without the store's fields", () => {
    const messages = [
      stored("t1", user("hi")),
      stored("t1", asking("c1")),
      stored("t1", { ...result("c1"), is_error: true } as ChatMessage),
      stored("t1", { role: "assistant", content: "done", tool_calls: [] }),
    ];

    expect(promptHistory(messages, [turn("t1", "completed")])).toEqual([
      user("hi"),
      asking("c1"),
      { ...result("c1"), is_error: true },
      answer("done"),
    ]);
  });

  it("keeps messages stored before turns were recorded, before the turn being run", () => {
    const messages = [
      stored(undefined, user("old")),
      stored(undefined, answer("old reply")),
      stored("t1", user("new")),
    ];

    expect(promptHistory(messages, [turn("t1", "running")], "t1")).toEqual([
      user("old"),
      answer("old reply"),
    ]);
  });

  it("keeps messages stored before turns were recorded when no turn is being run", () => {
    // currentTurnId is optional: left out, it must not match the messages that have no turn_id.
    const messages = [stored(undefined, user("old")), stored(undefined, answer("old reply"))];

    expect(promptHistory(messages, [])).toEqual([user("old"), answer("old reply")]);
  });

  it("keeps a failed turn whose tool ran, with a note saying it ended without an answer", () => {
    const messages = [
      stored("t1", user("remember x")),
      stored("t1", asking("c1")),
      stored("t1", result("c1")),
      stored("t2", user("what happened?")),
    ];
    const turns = [
      turn("t1", "failed", { code: "PROVIDER_ERROR", message: "upstream is down" }),
      turn("t2", "running"),
    ];

    expect(promptHistory(messages, turns, "t2")).toEqual([
      user("remember x"),
      asking("c1"),
      result("c1"),
      answer(
        "(This turn ended without an answer, failed (PROVIDER_ERROR: upstream is down). The tool calls above ran.)",
      ),
    ]);
  });

  it("answers a call left without a result, since it may or may not have taken effect", () => {
    const messages = [
      stored("t1", user("two things")),
      stored("t1", asking("c1", "c2")),
      stored("t1", result("c1")),
    ];
    const turns = [turn("t1", "cancelled", { code: "CANCELLED", message: "the turn was cancelled: a test" })];

    expect(promptHistory(messages, turns)).toEqual([
      user("two things"),
      asking("c1", "c2"),
      result("c1"),
      {
        role: "tool",
        tool_call_id: "c2",
        name: "note",
        content: "no result: the turn stopped while this call ran; it may or may not have taken effect",
        is_error: true,
      },
      answer(
        "(This turn ended without an answer, cancelled (CANCELLED: the turn was cancelled: a test). The tool calls above ran.)",
      ),
    ]);
  });

  it("says the daemon stopped for a turn left running without an error", () => {
    const messages = [stored("t1", user("go")), stored("t1", asking("c1"))];

    expect(promptHistory(messages, [turn("t1", "running")]).at(-1)).toEqual(
      answer("(This turn ended without an answer, failed (the daemon stopped). The tool calls above ran.)"),
    );
  });

  it("leaves out an unfinished turn that ran no tool", () => {
    const messages = [
      stored("t1", user("first")),
      stored("t1", answer("first reply")),
      stored("t2", user("this one failed")),
      stored("t3", user("third")),
      stored("t3", answer("third reply")),
    ];
    const turns = [
      turn("t1", "completed"),
      turn("t2", "failed", { code: "PROVIDER_ERROR", message: "down" }),
      turn("t3", "completed"),
    ];

    expect(promptHistory(messages, turns)).toEqual([
      user("first"),
      answer("first reply"),
      user("third"),
      answer("third reply"),
    ]);
  });

  it("gives each of two unfinished turns in a row its own note", () => {
    const messages = [
      stored("t1", user("one")),
      stored("t1", asking("a")),
      stored("t1", result("a")),
      stored("t2", user("two")),
      stored("t2", asking("b")),
    ];
    const turns = [
      turn("t1", "failed", { code: "PROVIDER_ERROR", message: "down" }),
      turn("t2", "cancelled", { code: "CANCELLED", message: "stop" }),
    ];

    const history = promptHistory(messages, turns);

    expect(history.map((m) => m.role)).toEqual([
      "user",
      "assistant",
      "tool",
      "assistant",
      "user",
      "assistant",
      "tool",
      "assistant",
    ]);
    expect(history[3]?.content).toContain("failed (PROVIDER_ERROR: down)");
    expect(history[7]?.content).toContain("cancelled (CANCELLED: stop)");
  });

  it("leaves out compacted messages and the turn being run", () => {
    const messages = [
      stored("t1", user("long ago"), { compacted: true }),
      stored("t1", answer("long ago reply"), { compacted: true }),
      stored("t2", user("recent")),
      stored("t2", answer("recent reply")),
      stored("t3", user("now")),
    ];
    const turns = [turn("t1", "completed"), turn("t2", "completed"), turn("t3", "running")];

    expect(promptHistory(messages, turns, "t3")).toEqual([user("recent"), answer("recent reply")]);
  });
});
