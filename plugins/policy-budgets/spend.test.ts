/**
 * The reservation arithmetic over bus-local's counters: a call reserves its worst case on every line
 * of every budget, is refused once spent + reserved reach a limit (BUDGET_EXCEEDED with the budget,
 * limit, spent and reset), settles to its real figures, seeds a counter from the ledger once, warns
 * once; and config validation refuses what the schema cannot (nan) naming the key.
 */
import { describe, expect, it } from "vitest";
import type { BudgetRule, FighterRow, SparEventPayload, SpendRequest } from "../../sdk/index.js";
import { isSparError } from "../../sdk/index.js";
import { createBudgetCounters } from "../bus-local/budget-counters.js";
import { periodOf } from "./periods.js";
import { checkSettings, configuredRules } from "./rules.js";
import { createSpend } from "./spend.js";

const NOW = Date.parse("2025-06-17T15:00:00.000Z");
const fighter: FighterRow = {
  id: "f1",
  name: "ada",
  manifest: {
    name: "ada",
    description: "",
    system_prompt: "",
    budget: { daily: 0.01, daily_tokens: 10_000 },
  },
  created_at: "",
};

function setup(seed = { cost_micros: 0, tokens: 0 }) {
  const counters = createBudgetCounters(() => NOW);
  const published: SparEventPayload[] = [];
  const reads: unknown[] = [];
  const spend = createSpend({
    currency: "USD",
    warnAtPercent: 50,
    marks: { of: async (kind) => periodOf(kind, NOW, "UTC") },
    counters: () => counters,
    spent: async (filter) => {
      reads.push(filter);
      return seed;
    },
    events: {
      publish: (e: SparEventPayload) => published.push(e),
      subscribe: () => () => undefined,
    } as never,
    log: { info() {}, warn() {}, error() {} },
  });
  const rules: BudgetRule[] = configuredRules(
    { currency: "USD", warn_at_percent: 50 },
    {
      fighter,
      bout_id: "b",
      turn_id: "t",
      origin: "user",
    },
  );
  const request = (worst = { tokens: 1000, cost_micros: 4000 }): SpendRequest => ({
    fighter,
    bout_id: "b",
    turn_id: "t",
    origin: "user",
    model: { provider: "openai", model: "m" },
    worst: () => worst,
    rules,
    ask: async () => undefined,
  });
  return { counters, spend, request, published, reads };
}

describe("budget reservations", () => {
  it("seeds a budget whose rows several filters name (a troop's tasks) with their sums added", async () => {
    const { spend, request, reads, counters } = setup({ cost_micros: 0, tokens: 300 });
    const asked: string[] = [];
    const troop: BudgetRule = {
      scope: "troop",
      name: "crew",
      key: "troop:t1",
      limits: { daily_tokens: 1000 },
      ledger: { origin: "troop-task:b" },
      ledgers: async (since) => {
        asked.push(since);
        return [{ origin: "troop-task:a" }, { origin: "troop-task:b" }];
      },
    };
    await spend.reserve({ ...request(), origin: "troop-task:b", rules: [troop] });
    expect(asked).toEqual(["2025-06-17T00:00:00.000Z"]);
    expect(reads).toEqual([
      { origin: "troop-task:a", since: "2025-06-17T00:00:00.000Z" },
      { origin: "troop-task:b", since: "2025-06-17T00:00:00.000Z" },
    ]);
    expect(await counters.read(["troop:t1:daily_tokens:2025-06-17"])).toEqual([
      { spent: 600, reserved: 1000 },
    ]);
  });

  it("reserves the worst case on every line, settles to the real figures, and refuses at the limit", async () => {
    const { counters, spend, request, published, reads } = setup({ cost_micros: 2000, tokens: 100 });
    const first = await spend.reserve(request());
    // Seeded once from the ledger since the day began (UTC here), for the fighter's rows.
    expect(reads).toEqual([{ fighter_id: "f1", since: "2025-06-17T00:00:00.000Z" }]);
    const keys = ["fighter:f1:daily:2025-06-17", "fighter:f1:daily_tokens:2025-06-17"];
    expect(await counters.read(keys)).toEqual([
      { spent: 2000, reserved: 4000 },
      { spent: 100, reserved: 1000 },
    ]);
    // A second call in flight sees the first's reservation: 2,000 + 4,000 < 10,000.
    const second = await spend.reserve(request());
    await first?.settle({ tokens: 300, cost_micros: 3500 }, true);
    await second?.settle({ tokens: 300, cost_micros: 3500 }, true);
    expect(await counters.read(keys)).toEqual([
      { spent: 9000, reserved: 0 },
      { spent: 700, reserved: 0 },
    ]);
    // Crossing 50 % (5,000 micro-dollars) was told once.
    expect(published.filter((e) => e.kind === "budget.warning")).toEqual([
      expect.objectContaining({ budget: "fighter:ada:daily", limit: 0.01, spent: 0.0055, percent: 55 }),
    ]);
    const third = await spend.reserve(request());
    await third?.settle({ tokens: 10, cost_micros: 1000 }, true);
    const refused = await spend.reserve(request()).catch((err: unknown) => err);
    expect(isSparError(refused, "BUDGET_EXCEEDED")).toBe(true);
    expect((refused as { extra: unknown }).extra).toEqual({
      budget: "fighter:ada:daily",
      limit: 0.01,
      spent: 0.01,
      unit: "money",
      currency: "USD",
      resets_at: "2025-06-18T00:00:00.000Z",
    });
    expect(published.at(-1)).toMatchObject({ kind: "budget.exceeded", action: "stopped", turn_id: "t" });
    expect(reads).toHaveLength(1);
  });

  it("releases a failed call's reservation, and charges a call with no reported usage its worst case", async () => {
    const { counters, spend, request } = setup();
    const failed = await spend.reserve(request());
    await failed?.release();
    const silent = await spend.reserve(request());
    await silent?.settle({ tokens: 1000, cost_micros: 4000 }, false);
    expect(await counters.read(["fighter:f1:daily:2025-06-17"])).toEqual([{ spent: 4000, reserved: 0 }]);
  });

  it("lets an unpriced model's call pass money budgets, counting its tokens", async () => {
    const { counters, spend, request } = setup();
    const hold = await spend.reserve(request({ tokens: 500, cost_micros: null as unknown as number }));
    await hold?.settle({ tokens: 400, cost_micros: null }, true);
    expect(
      await counters.read(["fighter:f1:daily:2025-06-17", "fighter:f1:daily_tokens:2025-06-17"]),
    ).toEqual([null, { spent: 400, reserved: 0 }]);
  });

  it("goes past a budget for the rest of a turn an operator approved, and stops on a denial", async () => {
    const { spend, request } = setup({ cost_micros: 10_000, tokens: 0 });
    const denied = await spend
      .reserve({ ...request(), rules: askRules(), ask: async () => "denied" })
      .catch((err: unknown) => err);
    expect(isSparError(denied, "BUDGET_EXCEEDED")).toBe(true);
    let asked = 0;
    const approve = async () => {
      asked += 1;
      return "approved" as const;
    };
    const approved = { ...request(), rules: askRules(), ask: approve };
    expect(await spend.reserve(approved)).toBeDefined();
    expect(await spend.reserve(approved)).toBeDefined();
    expect(asked).toBe(1);
  });

  function askRules(): BudgetRule[] {
    return [
      { scope: "global", name: null, key: "global", limits: { daily: 0.01, on_exceed: "ask" }, ledger: {} },
    ];
  }
});

describe("budget config", () => {
  it("refuses a limit the schema lets through (TOML's nan), naming the key", () => {
    expect(() =>
      checkSettings({ currency: "USD", warn_at_percent: 80, global: { daily: Number.NaN } }),
    ).toThrow(/budgets\.global\.daily/);
    expect(() =>
      checkSettings({ currency: "USD", warn_at_percent: 80, channels: { telegram: { monthly: Infinity } } }),
    ).toThrow(/budgets\.channels\.telegram\.monthly/);
    expect(() => checkSettings({ currency: "USD", warn_at_percent: 80, global: { daily: 3 } })).not.toThrow();
  });

  it("applies the global budget, the fighter's and the channel platform's of the origin", () => {
    const settings = {
      currency: "USD" as const,
      warn_at_percent: 80,
      global: { monthly: 100 },
      channels: { telegram: { daily_tokens: 5 } },
    };
    const rules = configuredRules(settings, {
      fighter,
      bout_id: "b",
      turn_id: "t",
      origin: "channel:telegram:42",
    });
    expect(rules.map((r) => [r.scope, r.name, r.key, r.ledger])).toEqual([
      ["global", null, "global", {}],
      ["fighter", "ada", "fighter:f1", { fighter_id: "f1" }],
      ["channel", "telegram", "channel:telegram", { origin_prefix: "channel:telegram:" }],
    ]);
  });
});
