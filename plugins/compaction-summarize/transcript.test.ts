import { describe, expect, it } from "vitest";
import type { StoredMessage } from "../../sdk/index.js";
import { transcript } from "./transcript.js";

const at = { bout_id: "b", created_at: "" };

describe("summary transcript", () => {
  it("writes every kind of message, tool calls and results included, after the summary so far", () => {
    const messages: StoredMessage[] = [
      { ...at, id: "1", seq: 1, role: "user", content: "Store my tea" },
      {
        ...at,
        id: "2",
        seq: 2,
        role: "assistant",
        content: "",
        tool_calls: [{ id: "c", name: "memory_store", arguments: { key: "tea", value: "lapsang" } }],
      },
      { ...at, id: "3", seq: 3, role: "tool", tool_call_id: "c", name: "memory_store", content: "ok" },
      { ...at, id: "4", seq: 4, role: "assistant", content: "Stored." },
    ];
    expect(transcript("The user is Ana.", messages)).toBe(
      [
        "Summary so far:",
        "The user is Ana.",
        "",
        "New messages:",
        "User: Store my tea",
        'Assistant called: memory_store({"key":"tea","value":"lapsang"})',
        "Result of memory_store: ok",
        "Assistant: Stored.",
      ].join("\n"),
    );
  });

  it("clips very long messages", () => {
    const long: StoredMessage = { ...at, id: "1", seq: 1, role: "user", content: "x".repeat(5000) };
    expect(transcript("", [long]).length).toBeLessThan(2100);
  });
});
