import { messageTokens } from "../../sdk/tokens.js";
import type { ChatMessage } from "../../sdk/types.js";

/**
 * The prompt histories of recently active bouts, so a turn that follows the last one in its bout
 * does not read and decrypt the bout's whole uncompacted tail again: that read grows with the bout,
 * the rest of a turn does not. An entry is used only when the bout holds exactly one message more
 * than when it was kept (the new turn's own), so a write by anyone else makes it stale, not wrong;
 * compaction and a turn that did not complete drop it. Held to `budgetTokens` (estimated) in all,
 * least recently used out first.
 */
export function createHistoryCache(budgetTokens: number) {
  const entries = new Map<string, { count: number; tokens: number; history: ChatMessage[] }>();
  let total = 0;

  function drop(boutId: string): void {
    const entry = entries.get(boutId);
    if (!entry) return;
    total -= entry.tokens;
    entries.delete(boutId);
  }

  return {
    /** The history kept for the bout, if the bout has grown by exactly the message just added. */
    take(boutId: string, messageCount: number): ChatMessage[] | undefined {
      const entry = entries.get(boutId);
      drop(boutId);
      return entry && entry.count === messageCount - 1 ? entry.history : undefined;
    },
    /** Keeps the history of a bout that holds `messageCount` messages after a completed turn. */
    put(boutId: string, messageCount: number, history: ChatMessage[]): void {
      drop(boutId);
      const tokens = history.reduce((n, m) => n + messageTokens(m), 0);
      if (tokens > budgetTokens) return;
      for (const [oldest] of entries) {
        if (total + tokens <= budgetTokens) break;
        drop(oldest);
      }
      entries.set(boutId, { count: messageCount, tokens, history });
      total += tokens;
    },
    drop,
  };
}

export type HistoryCache = ReturnType<typeof createHistoryCache>;
