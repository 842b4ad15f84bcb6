import { describe, expect, it } from "vitest";
import { matchGrants } from "../kernel/fighters/fighter-manifest.js";
import type { MoveCallInfo } from "../sdk/hooks.js";
import type { Capability, FighterRow } from "../sdk/types.js";
import { originFilter, originMatches } from "./bout-origins.js";
import { callerGrants, callerRefusal, originOf, resolveCallers } from "./fighter-chain.js";

const fighter = (id: string, name: string, capabilities: Capability[]): FighterRow => ({
  id,
  name,
  created_at: "",
  manifest: { name, description: name, system_prompt: "", capabilities },
});
const mallory = fighter("m-1", "mallory", [{ type: "agent_message" }, { type: "shell_exec", pattern: "ls" }]);
const boss = fighter("b-1", "boss", [{ type: "full_access" }]);
const spar = fighter("s-1", "spar", [{ type: "full_access" }]);
const rows = new Map([mallory, boss, spar].map((f) => [f.id, f]));
const byId = async (id: string) => rows.get(id);

/** The kernel's view of one call of `move` (capability `capability`) by spar, with these callers. */
function call(move: string, capability: string, callers: FighterRow[], server?: string): MoveCallInfo {
  const declaration = { capability, ...(server ? { server } : {}) };
  return {
    call: { id: "c1", name: move, arguments: {} },
    fighter: spar,
    bout_id: "b",
    turn_id: "t",
    origin: "user",
    capability,
    ...(server ? { server } : {}),
    effects: "external",
    destructive: false,
    grants: matchGrants(spar.manifest.capabilities ?? [], declaration),
    callers: callerGrants(callers, (grants) => matchGrants(grants, declaration)),
    workspace: "/nonexistent/workspaces/spar",
    taint: [],
    signal: new AbortController().signal,
  };
}

describe("the grants of a turn another fighter started", () => {
  it("are refused where a caller holds no grant for the move, naming it and the chain", () => {
    expect(callerRefusal(call("web_fetch", "network", [mallory]))).toEqual({
      code: "CAPABILITY_DENIED",
      message:
        'web_fetch is not allowed in this turn: it was started by fighter "mallory" (m-1), which does not hold the "network" capability (call chain: "mallory" → "spar"); a fighter gains no rights by asking another',
    });
    // Down a longer chain, the one that lacks it is named, wherever it stands.
    expect(callerRefusal(call("web_fetch", "network", [boss, mallory]))?.message).toContain(
      'started by fighter "mallory" (m-1), which does not hold the "network" capability (call chain: "boss" → "mallory" → "spar")',
    );
    // An MCP grant for another server is no grant for this one.
    const mcp = fighter("x-1", "xavier", [{ type: "mcp", server: "calendar" }]);
    expect(callerRefusal(call("mcp_mail_send", "mcp", [mcp], "mail"))?.message).toContain(
      'does not hold the "mcp" capability for server "mail"',
    );
    expect(callerRefusal(call("mcp_calendar_list", "mcp", [mcp], "calendar"))).toBeUndefined();
  });

  it("pass where every caller holds a grant, handing the move each caller's matching grants", () => {
    const info = call("shell_exec", "shell_exec", [boss, mallory]);
    expect(callerRefusal(info)).toBeUndefined();
    expect(info.callers).toEqual([
      {
        id: "b-1",
        name: "boss",
        grants: [{ type: "full_access" }],
        capabilities: boss.manifest.capabilities,
      },
      {
        id: "m-1",
        name: "mallory",
        grants: [{ type: "shell_exec", pattern: "ls" }],
        capabilities: mallory.manifest.capabilities,
      },
    ]);
    // A user's turn has no callers: nothing to intersect.
    expect(callerRefusal(call("web_fetch", "network", []))).toBeUndefined();
    // Moves every fighter has (capability "none") are every caller's too.
    expect(callerRefusal(call("skill_search", "none", [mallory]))).toBeUndefined();
  });

  it("come from the fighters of the chain only, by id, and refuse a caller that is gone", async () => {
    expect(await resolveCallers([], byId)).toEqual([]);
    // A troop task started the chain: it is no fighter and limits nothing.
    expect(await resolveCallers(["troop-task:t1", "m-1"], byId)).toEqual([mallory]);
    await expect(resolveCallers(["m-1", "gone-1"], byId)).rejects.toMatchObject({
      code: "FIGHTER_NOT_FOUND",
    });
  });

  it("run in a bout of their starter's: a fighter's, or a troop task's", () => {
    expect(originOf([])).toBeUndefined();
    expect(originOf(["m-1"])).toBe("fighter:m-1");
    expect(originOf(["troop-task:t1"])).toBe("troop-task:t1");
    expect(originOf(["troop-task:t1", "m-1", "b-1"])).toBe("fighter:b-1");
  });

  it("takes the entry point's origin when no fighter started the turn, and stores a user's as none", () => {
    expect(originOf([], "channel:telegram:42")).toBe("channel:telegram:42");
    expect(originOf([], "user")).toBeUndefined();
    // A fighter's message inside a channel turn runs in a bout of that fighter's.
    expect(originOf(["m-1"], "channel:telegram:42")).toBe("fighter:m-1");
    expect(originMatches("channel:telegram:42", "channel")).toBe(true);
    expect(originMatches("channel:telegram:42", "channel:telegram")).toBe(true);
    expect(originMatches("channel:telegramx:1", "channel:telegram")).toBe(false);
    expect(originMatches("user", "user")).toBe(true);
    expect(() => originFilter("", "--origin")).toThrow(/^--origin must be 1 to 300 characters/);
  });
});
