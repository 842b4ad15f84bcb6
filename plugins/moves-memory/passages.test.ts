import { describe, expect, it } from "vitest";
import type { MoveCaller, TurnSummary } from "../../sdk/index.js";
import { mayRead, turnPassages } from "./passages.js";

const AT = "2026-01-01T00:00:00.000Z";

function turn(origin: string, taint?: TurnSummary["taint"]): TurnSummary {
  return {
    fighter: {
      id: "f",
      name: "ada",
      created_at: AT,
      manifest: { name: "ada", description: "", system_prompt: "", capabilities: [{ type: "memory" }] },
    },
    bout_id: "b",
    turn_id: "t",
    origin,
    first_seq: 7,
    new_messages: [
      { role: "user", content: "Meet me by the lighthouse." },
      { role: "assistant", content: "", tool_calls: [{ id: "c", name: "web_fetch", arguments: {} }] },
      { role: "tool", tool_call_id: "c", name: "web_fetch", content: "a page" },
      { role: "assistant", content: "I will." },
    ],
    usage: { input_tokens: 0, output_tokens: 0 },
    iterations: 1,
    model: { provider: "openai", model: "m" },
    new_bout: false,
    context_tokens: 0,
    ...(taint ? { taint } : {}),
  } as TurnSummary;
}

describe("turnPassages", () => {
  it("copies nothing of a fighter without memory: it could not search it", () => {
    const plain = turn("user");
    expect(
      turnPassages(
        {
          ...plain,
          fighter: { ...plain.fighter, manifest: { ...plain.fighter.manifest, capabilities: [] } },
        },
        AT,
      ),
    ).toEqual([]);
  });

  it("keeps what was said, each at its seq, not tool results nor empty messages", () => {
    const passages = turnPassages(turn("user"), AT);
    expect(passages.map((p) => [p.id, p.role, p.text])).toEqual([
      ["b:7", "user", "Meet me by the lighthouse."],
      ["b:10", "assistant", "I will."],
    ]);
    expect(passages.every((p) => p.taint === undefined)).toBe(true);
  });

  it("marks a channel chat's words and a tainted turn's answer with their source", () => {
    const web = { kind: "web" as const, detail: "https://evil.example", move: "web_fetch" };
    const [said, answered] = turnPassages(turn("channel:telegram:42", [web]), AT);
    expect(said?.taint).toEqual({ kind: "channel", detail: "telegram:42" });
    expect(answered?.taint).toEqual(web);
  });
});

describe("mayRead", () => {
  const grant = (scope?: string | string[]) => ({ type: "memory", ...(scope ? { scope } : {}) });
  const context = (grants: ReturnType<typeof grant>[], callers: MoveCaller[] = []) => ({
    origin: "user",
    grants,
    callers,
  });

  it("reads the bout's own origin; another only as every grant set's scope names it", () => {
    expect(mayRead(context([grant()]), "user")).toBe(true);
    expect(mayRead(context([grant()]), "channel:telegram:42")).toBe(false);
    expect(mayRead(context([grant("channel")]), "channel:telegram:42")).toBe(true);
    expect(mayRead(context([grant(["channel:slack"])]), "channel:telegram:42")).toBe(false);
    expect(mayRead(context([grant("*")]), "gorilla:digest")).toBe(true);
    // A caller in the chain without the scope narrows it: no privilege by asking another fighter.
    const caller: MoveCaller = { id: "c", name: "c", grants: [grant()], capabilities: [grant()] };
    expect(mayRead(context([grant("*")], [caller]), "channel:telegram:42")).toBe(false);
  });
});
