import { describe, expect, it } from "vitest";
import { resultText } from "./tool-result.js";

describe("a tool result as the model reads it", () => {
  it("joins the text blocks", () => {
    expect(
      resultText({
        content: [
          { type: "text", text: "first" },
          { type: "text", text: "second" },
        ],
      }),
    ).toBe("first\nsecond");
  });

  it("adds the structured content as JSON", () => {
    expect(
      resultText({ content: [{ type: "text", text: "1 event" }], structuredContent: { events: [1] } }),
    ).toBe('1 event\n{"events":[1]}');
  });

  it("does not repeat structured content a text block already holds", () => {
    const structured = { events: [{ id: "e1" }] };
    expect(
      resultText({
        content: [{ type: "text", text: JSON.stringify(structured, null, 2) }],
        structuredContent: structured,
      }),
    ).toBe(JSON.stringify(structured, null, 2));
  });

  it("describes images, audio and binary resources instead of sending their bytes", () => {
    const text = resultText({
      content: [
        { type: "image", mimeType: "image/png", data: "aGVsbG8=" },
        { type: "audio", mimeType: "audio/wav", data: "AAAA" },
        {
          type: "resource",
          resource: { uri: "file:///a.bin", mimeType: "application/octet-stream", blob: "AAECAw==" },
        },
        { type: "resource", resource: { uri: "file:///notes.txt", text: "the notes" } },
        { type: "resource_link", uri: "file:///big.csv", name: "big.csv" },
      ],
    });
    expect(text).toBe(
      [
        "[image (image/png), 5 bytes, not shown]",
        "[audio (audio/wav), 3 bytes, not shown]",
        "[resource file:///a.bin (application/octet-stream), 4 bytes, not shown]",
        "[resource file:///notes.txt]\nthe notes",
        "[resource link: big.csv file:///big.csv]",
      ].join("\n"),
    );
    expect(text).not.toContain("aGVsbG8=");
  });

  it("says so when there is nothing", () => {
    expect(resultText({ content: [] })).toBe("(the tool returned no content)");
  });

  it("reads the result shape of protocol 2024-10-07", () => {
    expect(resultText({ toolResult: { ok: true } })).toBe('{"ok":true}');
  });
});
