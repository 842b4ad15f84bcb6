import { describe, expect, it } from "vitest";
import type { ChatMessage } from "../../sdk/index.js";
import { messageTokens, promptTokens } from "../../sdk/index.js";
import { createCycleBudget } from "./budget.js";

const user: ChatMessage = { role: "user", content: "u".repeat(400) };
const system = "s".repeat(400);
const tool = {
  name: "memory_store",
  description: "Store a memory",
  input_schema: { type: "object", properties: { key: { type: "string" } } },
};

describe("estimates", () => {
  it("count a prompt's system prompt, messages and tool definitions at 4 characters a token", () => {
    expect(messageTokens(user)).toBe(4 + 100);
    const bare = promptTokens({ system, messages: [user], tools: [] });
    expect(bare).toBe(100 + 104);
    expect(promptTokens({ system, messages: [user], tools: [tool] })).toBeGreaterThan(bare);
  });

  it("count an assistant's tool calls", () => {
    const call: ChatMessage = {
      role: "assistant",
      content: "",
      tool_calls: [{ id: "c1", name: "memory_store", arguments: { key: "k".repeat(100) } }],
    };
    expect(messageTokens(call)).toBeGreaterThan(4 + 25);
  });
});

describe("a cycle's budget", () => {
  it("admits calls while the cycle's tokens plus the next prompt stay within max_tokens", () => {
    const budget = createCycleBudget({ max_iterations: 10, max_tokens: 1000 });
    expect(budget.admit({ system, messages: [user], tools: [] })).toEqual({ ok: true });
    expect(budget.calls).toBe(1);
    expect(budget.spent).toBe(204);
  });

  it("counts replies as output once they appear in the next prompt, and refuses the call that would pass", () => {
    const budget = createCycleBudget({ max_iterations: 10, max_tokens: 600 });
    expect(budget.admit({ system, messages: [user], tools: [] }).ok).toBe(true);
    const reply: ChatMessage = {
      role: "assistant",
      content: "a".repeat(400),
      tool_calls: [{ id: "c1", name: "memory_store", arguments: { key: "x" } }],
    };
    const result: ChatMessage = { role: "tool", tool_call_id: "c1", name: "memory_store", content: "ok" };
    // Spent: 204 (first prompt) + the reply; next prompt: system, user, reply, result.
    const verdict = budget.admit({ system, messages: [user, reply, result], tools: [] });
    expect(verdict.ok).toBe(false);
    expect(verdict.ok === false && verdict.reason).toMatch(
      /^hit its max_tokens budget of 600: about \d+ tokens spent in 1 model call, and the next call would send about \d+ more$/,
    );
    expect(budget.calls).toBe(1);
    expect(budget.spent).toBe(204 + messageTokens(reply));
  });

  it("refuses a first prompt larger than the whole budget", () => {
    const budget = createCycleBudget({ max_iterations: 10, max_tokens: 100 });
    expect(budget.admit({ system, messages: [user], tools: [] }).ok).toBe(false);
    expect(budget.calls).toBe(0);
  });

  it("refuses the call past max_iterations", () => {
    const budget = createCycleBudget({ max_iterations: 2, max_tokens: 1_000_000 });
    const messages: ChatMessage[] = [user];
    expect(budget.admit({ system, messages, tools: [] }).ok).toBe(true);
    messages.push({ role: "assistant", content: "one" });
    expect(budget.admit({ system, messages, tools: [] }).ok).toBe(true);
    messages.push({ role: "assistant", content: "two" });
    expect(budget.admit({ system, messages, tools: [] })).toEqual({
      ok: false,
      reason: "hit its max_iterations budget: 2 model calls without a final answer",
    });
  });
});
