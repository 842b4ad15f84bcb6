import { describe, expect, it } from "vitest";
import { createHistoryCache } from "../../kernel/turns/history-cache.js";
import type { ChatMessage } from "../../sdk/types.js";

const said = (content: string): ChatMessage => ({ role: "assistant", content });

describe("history cache", () => {
  it("gives a bout's history back once, when the bout grew by exactly the new message", () => {
    const cache = createHistoryCache(1000);
    const history = [said("a"), said("b")];
    cache.put("b1", 2, history);
    expect(cache.take("b1", 3)).toBe(history);
    expect(cache.take("b1", 3)).toBeUndefined(); // taken: the turn puts it back when it completes
  });

  it("treats a bout that grew otherwise (another writer) as unknown", () => {
    const cache = createHistoryCache(1000);
    cache.put("b1", 2, [said("a")]);
    expect(cache.take("b1", 5)).toBeUndefined();
    cache.put("b1", 2, [said("a")]);
    expect(cache.take("b1", 2)).toBeUndefined();
  });

  it("keeps within its budget, dropping the least recently kept first", () => {
    const cache = createHistoryCache(30); // each history below is 4 + 4 = 8 tokens
    const big = () => [said("x".repeat(16))];
    cache.put("b1", 1, big());
    cache.put("b2", 1, big());
    cache.put("b3", 1, big());
    cache.put("b4", 1, big());
    expect(cache.take("b1", 2)).toBeUndefined();
    expect(cache.take("b4", 2)).toBeDefined();
    cache.put("huge", 1, [said("y".repeat(400))]); // over the whole budget: not kept at all
    expect(cache.take("huge", 2)).toBeUndefined();
    expect(cache.take("b2", 2)).toBeDefined();
  });

  it("forgets a dropped bout (compaction, a turn that did not complete)", () => {
    const cache = createHistoryCache(1000);
    cache.put("b1", 2, [said("a")]);
    cache.drop("b1");
    expect(cache.take("b1", 3)).toBeUndefined();
  });
});
