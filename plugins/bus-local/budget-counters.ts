/**
 * `bus-local`'s budget counters (issue 31): each budget's current period as a figure spent and the
 * reservations of the calls in flight, in this process. Nothing here outlives it: the budgets
 * plugin seeds a counter it finds missing from the usage ledger, so a restart loses only the
 * reservations of calls that died with it. The rules are `bus-redis`'s; both pass
 * test/contract/bus.test.ts.
 */
import type { BudgetCounters, BudgetLine } from "../../sdk/index.js";

interface Counter {
  spent: number;
  /** Reserved per call id, and their sum. */
  holds: Map<string, number>;
  held: number;
  expires_at: number;
}

export function createBudgetCounters(now: () => number = Date.now): BudgetCounters {
  const counters = new Map<string, Counter>();

  /** A counter past its period's end is dropped when a new one starts (a period turns rarely). */
  function prune(): void {
    const at = now();
    for (const [key, counter] of counters) if (counter.expires_at <= at) counters.delete(key);
  }

  function live(key: string): Counter | undefined {
    const counter = counters.get(key);
    if (counter && counter.expires_at <= now()) {
      counters.delete(key);
      return undefined;
    }
    return counter;
  }

  const amount = (n: number) => Math.max(0, Math.round(n));

  return {
    async reserve(id, lines: readonly BudgetLine[]) {
      const missing = lines.filter((l) => l.seed === undefined && !live(l.key)).map((l) => l.key);
      if (missing.length > 0) return { ok: false, missing };
      for (const [index, line] of lines.entries()) {
        const counter = live(line.key);
        const spent = counter?.spent ?? amount(line.seed ?? 0);
        const reserved = counter?.held ?? 0;
        if (!line.force && spent + reserved >= line.limit) return { ok: false, index, spent, reserved };
      }
      for (const line of lines) {
        let counter = live(line.key);
        if (!counter) {
          prune();
          counter = { spent: amount(line.seed ?? 0), holds: new Map(), held: 0, expires_at: line.expires_at };
          counters.set(line.key, counter);
        }
        const held = amount(line.amount) + (counter.holds.get(id) ?? 0);
        counter.held += held - (counter.holds.get(id) ?? 0);
        counter.holds.set(id, held);
      }
      return { ok: true };
    },
    async settle(id, keys, amounts, warnAt) {
      const crossed: number[] = [];
      for (const [index, key] of keys.entries()) {
        const counter = live(key);
        // Forgotten (its period ended): the next reservation seeds it from the ledger.
        if (!counter) continue;
        counter.held -= counter.holds.get(id) ?? 0;
        counter.holds.delete(id);
        const before = counter.spent;
        counter.spent += amount(amounts[index] ?? 0);
        const warn = warnAt[index] ?? 0;
        if (warn > 0 && before < warn && counter.spent >= warn) crossed.push(index);
      }
      return crossed;
    },
    async release(id, keys) {
      for (const key of keys) {
        const counter = live(key);
        if (!counter) continue;
        counter.held -= counter.holds.get(id) ?? 0;
        counter.holds.delete(id);
      }
    },
    async read(keys) {
      return keys.map((key) => {
        const counter = live(key);
        return counter ? { spent: counter.spent, reserved: counter.held } : null;
      });
    },
  };
}
