import { describe, expect, it } from "vitest";
import type { ChatMessage, MoveDeclaration } from "../../sdk/index.js";
import { calledMoves, deferredNote, offerTools } from "./offer.js";

const tool = (name: string, capability = name): MoveDeclaration => ({
  name,
  description: name,
  capability,
  input_schema: { type: "object" },
});
const settings = { defer_above: 4, core: ["memory_store"] };

describe("offerTools", () => {
  it("offers every tool when they are few, without move_search", () => {
    const tools = [tool("memory_store"), tool("skill_load", "none"), tool("move_search", "none")];
    expect(offerTools(tools, [], settings).offered.map((t) => t.name)).toEqual([
      "memory_store",
      "skill_load",
    ]);
  });

  it("keeps the core, the meta moves and the activated ones past the limit, in the kernel's order", () => {
    const tools = [
      "file_read",
      "memory_store",
      "shell_exec",
      "skill_search",
      "skill_load",
      "move_search",
      "web_fetch",
    ].map((n) => tool(n));
    const { offered, deferred } = offerTools(tools, ["web_fetch"], settings);
    expect(offered.map((t) => t.name)).toEqual([
      "memory_store",
      "skill_search",
      "skill_load",
      "move_search",
      "web_fetch",
    ]);
    expect(deferred.map((t) => t.name)).toEqual(["file_read", "shell_exec"]);
    expect(deferredNote(deferred)).toMatch(/\(2, for: file_read, shell_exec\)/);
    expect(deferredNote([])).toBe("");
  });

  it("offers skill_read only once activated (a skill_load that listed files), few tools or many", () => {
    const few = [tool("memory_store"), tool("skill_load", "none"), tool("skill_read", "none")];
    const names = (activated: string[], tools = few) =>
      offerTools(tools, activated, settings).offered.map((t) => t.name);
    expect(names([])).toEqual(["memory_store", "skill_load"]);
    expect(names(["skill_read"])).toEqual(["memory_store", "skill_load", "skill_read"]);
    const many = [...few, ...["file_read", "shell_exec", "web_fetch"].map((n) => tool(n))];
    const { offered, deferred } = offerTools(many, [], settings);
    expect(offered.map((t) => t.name)).toEqual(["memory_store", "skill_load"]);
    // Not deferred either: move_search does not find it, skill_load offers it.
    expect(deferred.map((t) => t.name)).toEqual(["file_read", "shell_exec", "web_fetch"]);
    expect(names(["skill_read"], many)).toEqual(["memory_store", "skill_load", "skill_read"]);
  });

  it("counts the moves the bout has called", () => {
    const messages: ChatMessage[] = [
      { role: "user", content: "x" },
      { role: "assistant", content: "", tool_calls: [{ id: "1", name: "shell_exec", arguments: {} }] },
      { role: "tool", tool_call_id: "1", name: "shell_exec", content: "{}" },
    ];
    expect(calledMoves(messages)).toEqual(["shell_exec"]);
  });
});
