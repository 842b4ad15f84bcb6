import { describe, expect, it } from "vitest";
import { exposedNames, MODEL_SAFE_NAME } from "./naming.js";

const names = (server: string, tools: string[]) => Object.fromEntries(exposedNames(server, tools));

describe("the names MCP tools are offered under", () => {
  it("is mcp_<server>_<tool> for a model-safe tool name", () => {
    expect(names("calendar", ["list_events", "create-event"])).toEqual({
      "mcp_calendar_create-event": "create-event",
      mcp_calendar_list_events: "list_events",
    });
  });

  it("turns characters outside [a-zA-Z0-9_-] into _", () => {
    expect(names("mail", ["messages.send", "héllo wörld", "a/b:c"])).toEqual({
      mcp_mail_messages_send: "messages.send",
      mcp_mail_h_llo_w_rld: "héllo wörld",
      mcp_mail_a_b_c: "a/b:c",
    });
  });

  it("keeps an unchanged name and gives a changed one that collides with it a hash suffix", () => {
    const result = names("s", ["a_b", "a.b", "a:b"]);
    expect(result.mcp_s_a_b).toBe("a_b");
    const hashed = Object.keys(result).filter((n) => n !== "mcp_s_a_b");
    expect(hashed).toHaveLength(2);
    for (const name of hashed) expect(name).toMatch(/^mcp_s_a_b_[0-9a-f]{8}$/);
    expect(new Set(Object.values(result))).toEqual(new Set(["a_b", "a.b", "a:b"]));
  });

  it("shortens a name past 64 characters to a stem and a hash, distinct for distinct tools", () => {
    const long1 = `${"x".repeat(70)}_one`;
    const long2 = `${"x".repeat(70)}_two`;
    const result = names("server", [long1, long2]);
    const [first, second] = Object.keys(result);
    expect(first).not.toBe(second);
    for (const name of Object.keys(result)) {
      expect(name).toMatch(MODEL_SAFE_NAME);
      expect(name).toHaveLength(64);
      expect(name.startsWith("mcp_server_xxxx")).toBe(true);
    }
  });

  it("names the same tools the same way whatever order the server lists them in", () => {
    const tools = ["a.b", "a_b", "a:b", `${"y".repeat(80)}`, "z"];
    expect(names("s", tools)).toEqual(names("s", [...tools].reverse()));
  });

  it("only ever offers model-safe names", () => {
    const result = names("w-1", ["", "日本語", "tool with spaces", "x".repeat(200), "ok"]);
    for (const name of Object.keys(result)) expect(name).toMatch(MODEL_SAFE_NAME);
    expect(Object.keys(result)).toHaveLength(5);
  });
});
