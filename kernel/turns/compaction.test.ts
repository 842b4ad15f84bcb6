import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { contextTokens } from "../../sdk/tokens.js";
import type { ChatMessage, ProviderDeclaration, StoredMessage } from "../../sdk/types.js";
import { compactionBoundary, contextWindows, FALLBACK_WINDOW } from "./compaction.js";

function stored(messages: ChatMessage[]): StoredMessage[] {
  return messages.map((m, i) => ({ ...m, id: `m${i + 1}`, bout_id: "b", seq: i + 1, created_at: "" }));
}

const user = (content: string): ChatMessage => ({ role: "user", content });
const reply = (content: string): ChatMessage => ({ role: "assistant", content });
const calls = (...ids: string[]): ChatMessage => ({
  role: "assistant",
  content: "",
  tool_calls: ids.map((id) => ({ id, name: "t", arguments: {} })),
});
const result = (id: string): ChatMessage => ({ role: "tool", tool_call_id: id, name: "t", content: "r" });

describe("compactionBoundary", () => {
  it("keeps the keep_recent newest messages", () => {
    const messages = stored([user("1"), reply("2"), user("3"), reply("4"), user("5"), reply("6")]);
    expect(compactionBoundary(messages, 4)).toBe(2);
    expect(compactionBoundary(messages, 2)).toBe(4);
  });

  it("compacts nothing when there are no more than keep_recent messages", () => {
    const messages = stored([user("1"), reply("2")]);
    expect(compactionBoundary(messages, 2)).toBeUndefined();
    expect(compactionBoundary(messages, 5)).toBeUndefined();
  });

  it("never leaves a tool result without the call that asked for it", () => {
    // seq:  1 user, 2 calls(a,b), 3 result a, 4 result b, 5 reply, 6 user
    const messages = stored([
      user("q"),
      calls("a", "b"),
      result("a"),
      result("b"),
      reply("done"),
      user("next"),
    ]);
    // keep 3 would start at "result b": move back to the assistant that made the calls.
    expect(compactionBoundary(messages, 3)).toBe(1);
    expect(compactionBoundary(messages, 4)).toBe(1);
    expect(compactionBoundary(messages, 2)).toBe(4);
    const kept = (n: number) => messages.filter((m) => m.seq > (compactionBoundary(messages, n) ?? 0));
    for (let n = 1; n <= 5; n++) {
      const keptMessages = kept(n);
      const callIds = keptMessages.flatMap((m) =>
        m.role === "assistant" ? (m.tool_calls ?? []).map((c) => c.id) : [],
      );
      for (const m of keptMessages) if (m.role === "tool") expect(callIds).toContain(m.tool_call_id);
    }
  });

  it("compacts nothing when the whole history is one tool exchange", () => {
    const messages = stored([calls("a"), result("a"), result("a")]);
    expect(compactionBoundary(messages, 1)).toBeUndefined();
  });
});

describe("context estimates", () => {
  it("counts about four characters a token plus a little per message", () => {
    expect(contextTokens("x".repeat(400), [user("y".repeat(40))])).toBe(100 + 4 + 10);
  });

  it("takes the windows of common models from the provider manifests, and falls back for the rest", () => {
    const providers = new Map(
      ["openai", "anthropic", "google", "ollama"].flatMap((p) =>
        (
          JSON.parse(
            readFileSync(new URL(`../../plugins/provider-${p}/plugin.json`, import.meta.url), "utf8"),
          ) as {
            contributes: { providers: ProviderDeclaration[] };
          }
        ).contributes.providers.map((d) => [d.id, d] as const),
      ),
    );
    const contextWindowFor = contextWindows(providers);
    expect(contextWindowFor({ provider: "google", model: "gemini-2.5-flash" })).toBe(1_000_000);
    expect(contextWindowFor({ provider: "unknown", model: "claude-3" })).toBe(FALLBACK_WINDOW);
    expect(contextWindowFor({ provider: "openai", model: "gpt-4o-mini" })).toBe(128_000);
    expect(contextWindowFor({ provider: "anthropic", model: "claude-sonnet-4-5" })).toBe(200_000);
    expect(contextWindowFor({ provider: "openrouter", model: "anthropic/claude-3.5-haiku" })).toBe(200_000);
    expect(contextWindowFor({ provider: "ollama", model: "llama3.2" })).toBe(128_000);
    expect(contextWindowFor({ provider: "ollama", model: "tinyllama" })).toBe(FALLBACK_WINDOW);
    expect(contextWindowFor({ provider: "openai", model: "gpt-4o", context_window: 400 })).toBe(400);
  });

  it("keeps fewer than keep_recent when the kept messages alone would pass the budget", () => {
    const big = "x".repeat(4000);
    const messages: StoredMessage[] = [
      { id: "1", bout_id: "b", seq: 1, created_at: "", role: "user", content: "hi" },
      { id: "2", bout_id: "b", seq: 2, created_at: "", role: "assistant", content: "hello" },
      { id: "3", bout_id: "b", seq: 3, created_at: "", role: "user", content: big },
      { id: "4", bout_id: "b", seq: 4, created_at: "", role: "assistant", content: big },
      { id: "5", bout_id: "b", seq: 5, created_at: "", role: "user", content: "short" },
      { id: "6", bout_id: "b", seq: 6, created_at: "", role: "assistant", content: "answer" },
    ];
    expect(compactionBoundary(messages, 4)).toBe(2);
    // Two 1,000-token messages cannot stay within 500 tokens: they go too.
    expect(compactionBoundary(messages, 4, 500)).toBe(4);
    // Whatever the budget, the newest message stays.
    expect(compactionBoundary(messages, 4, 1)).toBe(5);
  });
});
