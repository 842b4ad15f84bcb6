import { describe, expect, it } from "vitest";
import { runTurn, type TurnInput } from "./agent-loop.js";
import { SparError } from "./errors.js";
import { createEventBus } from "./events.js";
import { createHooks } from "./hooks.js";
import type { LlmDriver, LlmRequest, LlmResponse, MoveDeclaration, MoveHandler, ToolCall } from "./types.js";

/** A driver that answers from a script, recording what the loop sent: the loop's logic under test, not a provider. */
function scriptedDriver(replies: Partial<LlmResponse>[]) {
  const requests: LlmRequest[] = [];
  const driver: LlmDriver = {
    provider: "scripted",
    probe: async () => "ok",
    async complete(request) {
      requests.push(structuredClone({ ...request, onDelta: undefined }));
      const next = replies.shift() ?? { text: "final" };
      return {
        text: "",
        tool_calls: [],
        usage: { input_tokens: 10, output_tokens: 2 },
        stop_reason: "end",
        model: "m",
        ...next,
      };
    },
  };
  return { driver, requests };
}

const echoMove: MoveDeclaration = {
  name: "echo",
  description: "echo",
  capability: "memory",
  input_schema: { type: "object", required: ["text"], properties: { text: { type: "string" } } },
};

function call(args: Record<string, unknown>, id = "c1"): ToolCall {
  return { id, name: "echo", arguments: args };
}

function input(overrides: Partial<TurnInput> = {}): TurnInput {
  return {
    fighter: {
      id: "f1",
      name: "f",
      created_at: "",
      manifest: { name: "f", description: "", system_prompt: "be brief", capabilities: [{ type: "memory" }] },
    },
    bout_id: "b1",
    model: { provider: "scripted", model: "m" },
    history: [],
    user: { role: "user", content: "hi" },
    offered: [echoMove],
    declared: new Map([["echo", echoMove]]),
    maxIterations: 5,
    loopGuardRepeats: 3,
    toolTimeoutMs: 1000,
    ...overrides,
  };
}

function deps(driver: LlmDriver, handler?: MoveHandler) {
  return {
    hooks: createHooks(),
    events: createEventBus({ historySize: 100 }),
    driver: async () => driver,
    move: async () => handler,
  };
}

const echoHandler: MoveHandler = { name: "echo", run: async (i) => `said ${String(i.text)}` };

describe("agent loop", () => {
  it("answers in one iteration when the model calls no tool", async () => {
    const { driver, requests } = scriptedDriver([{ text: "hello" }]);
    const out = await runTurn(input(), deps(driver));
    expect(out.result).toMatchObject({
      response: "hello",
      iterations: 1,
      stop_reason: "end",
      tool_calls: [],
    });
    expect(out.messages).toEqual([
      { role: "user", content: "hi" },
      { role: "assistant", content: "hello" },
    ]);
    expect(requests[0]?.system).toBe("be brief");
    expect(requests[0]?.tools.map((t) => t.name)).toEqual(["echo"]);
  });

  it("runs tool calls, feeds results back and sums usage", async () => {
    const { driver, requests } = scriptedDriver([{ tool_calls: [call({ text: "a" })] }, { text: "done" }]);
    const out = await runTurn(input(), deps(driver, echoHandler));
    expect(out.result).toMatchObject({
      response: "done",
      iterations: 2,
      tool_calls: [{ name: "echo", ok: true }],
    });
    expect(out.result.usage).toEqual({ input_tokens: 20, output_tokens: 4 });
    expect(requests[1]?.messages.at(-1)).toEqual({
      role: "tool",
      tool_call_id: "c1",
      name: "echo",
      content: "said a",
    });
  });

  it("returns refusals, bad input, unknown moves and failures to the model as tool errors", async () => {
    const hooksDeps = deps(scriptedDriver([]).driver, {
      name: "echo",
      run: async () => {
        throw new SparError("FORBIDDEN", "not today");
      },
    });
    const cases: [ToolCall, string][] = [
      [{ id: "1", name: "nope", arguments: {} }, "MOVE_NOT_FOUND"],
      [call({}), "VALIDATION_FAILED"],
      [{ id: "2", name: "echo", arguments: {}, raw_arguments: "{bad" }, "VALIDATION_FAILED"],
      [call({ text: "x" }), "FORBIDDEN"],
    ];
    for (const [toolCall, code] of cases) {
      const { driver } = scriptedDriver([{ tool_calls: [toolCall] }, { text: "ok" }]);
      const out = await runTurn(input(), { ...hooksDeps, driver: async () => driver });
      const result = out.messages.find((m) => m.role === "tool");
      expect(result && "is_error" in result && result.is_error).toBe(true);
      expect(JSON.parse(result?.content ?? "{}").error.code).toBe(code);
    }
  });

  it("lets a move.beforeCall tap refuse a call", async () => {
    const { driver } = scriptedDriver([{ tool_calls: [call({ text: "a" })] }, { text: "ok" }]);
    const d = deps(driver, echoHandler);
    d.hooks.move.beforeCall.tapPromise("test", async () => ({
      code: "CAPABILITY_DENIED",
      message: "no grant",
    }));
    const out = await runTurn(input(), d);
    expect(out.result.tool_calls).toEqual([{ name: "echo", ok: false }]);
    expect(out.messages[2]).toMatchObject({ role: "tool", is_error: true });
  });

  it("stops at max_iterations", async () => {
    const replies = Array.from({ length: 10 }, (_, i) => ({
      tool_calls: [call({ text: String(i) }, `c${i}`)],
    }));
    const { driver, requests } = scriptedDriver(replies);
    const out = await runTurn(input({ maxIterations: 3 }), deps(driver, echoHandler));
    expect(out.result.stop_reason).toBe("max_iterations");
    expect(requests).toHaveLength(3);
    expect(out.messages.at(-1)).toMatchObject({ role: "assistant" });
  });

  it("stops when the same call repeats, answering every pending call", async () => {
    const same = {
      tool_calls: [call({ text: "x" }), { id: "other", name: "echo", arguments: { text: "y" } }],
    };
    const { driver } = scriptedDriver([same, same, same, same]);
    const out = await runTurn(input({ loopGuardRepeats: 3 }), deps(driver, echoHandler));
    expect(out.result.stop_reason).toBe("loop_guard");
    expect(out.result.iterations).toBe(3);
    const callIds = out.messages.flatMap((m) =>
      m.role === "assistant" ? (m.tool_calls ?? []).map((c) => c.id) : [],
    );
    const resultIds = out.messages.flatMap((m) => (m.role === "tool" ? [m.tool_call_id] : []));
    expect(resultIds).toEqual(callIds);
  });

  it("counts arguments in any key order as the same call", async () => {
    const a = { id: "1", name: "echo", arguments: { text: "x", n: 1 } };
    const b = { id: "2", name: "echo", arguments: { n: 1, text: "x" } };
    const { driver } = scriptedDriver([{ tool_calls: [a] }, { tool_calls: [b] }]);
    const out = await runTurn(input({ loopGuardRepeats: 2 }), deps(driver, echoHandler));
    expect(out.result.stop_reason).toBe("loop_guard");
  });

  it("times out a slow move", async () => {
    const { driver } = scriptedDriver([{ tool_calls: [call({ text: "a" })] }, { text: "ok" }]);
    const slow: MoveHandler = { name: "echo", run: () => new Promise(() => {}) };
    const out = await runTurn(input({ toolTimeoutMs: 50 }), deps(driver, slow));
    expect(out.messages[2]?.content).toContain("timed out after 50 ms");
  });

  it("wraps a driver's plain error as PROVIDER_ERROR", async () => {
    const driver: LlmDriver = {
      provider: "scripted",
      probe: async () => "ok",
      complete: async () => {
        throw new Error("socket hang up");
      },
    };
    await expect(runTurn(input(), deps(driver))).rejects.toMatchObject({ code: "PROVIDER_ERROR" });
  });
});
