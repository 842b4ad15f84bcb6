import { describe, expect, it } from "vitest";
import { createHooks } from "../kernel/hooks.js";
import { SparError } from "../sdk/errors.js";
import type { SpendContext, SpendRequest } from "../sdk/hooks.js";
import type { Logger } from "../sdk/index.js";
import type { UsageRecord } from "../sdk/store-rows.js";
import type { Store } from "../sdk/store-types.js";
import type { FighterRow, LlmDriver, LlmRequest, ModelSettings } from "../sdk/types.js";
import { createUsageMeter, meteredCall } from "./usage-meter.js";

const MODEL: ModelSettings = { provider: "openai", model: "m" };
const REQUEST: LlmRequest = {
  model: MODEL,
  system: "s",
  messages: [{ role: "user", content: "hi" }],
  tools: [],
};
const FIGHTER = { id: "f1", name: "ada" } as FighterRow;
const CALL: SpendContext = { fighter: FIGHTER, bout_id: "b1", turn_id: "t1", origin: "channel:telegram:42" };
const quiet: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child: () => quiet,
} as unknown as Logger;

/** A driver that answers every call with fixed usage, counting its calls. */
function driver() {
  let calls = 0;
  const d: LlmDriver = {
    provider: "openai",
    probe: async () => undefined,
    async complete() {
      calls += 1;
      return {
        text: "ok",
        tool_calls: [],
        stop_reason: "end",
        usage: { input_tokens: 10, output_tokens: 5 },
      };
    },
  } as unknown as LlmDriver;
  return { d, calls: () => calls };
}

function meterWith(rows: UsageRecord[], budgets: "none" | "over") {
  const hooks = createHooks();
  const asked: string[] = [];
  if (budgets === "over") {
    hooks.spend.budgets.tap("test", (rules) => [
      ...rules,
      {
        scope: "global",
        name: null,
        key: "global",
        limits: { daily: 0.01, on_exceed: "ask" },
        ledger: {},
      },
    ]);
    hooks.spend.reserve.tapPromise("test", async (request: SpendRequest) => {
      const answer = await request.ask({ subject: "over", why: "used up" });
      throw new SparError(
        "BUDGET_EXCEEDED",
        `the budget global:daily is used up (${answer ?? "no one asked"})`,
      );
    });
    hooks.spend.ask.tap("test", (question) => {
      asked.push(question.subject);
      return "approved";
    });
  }
  const store = { usage: { record: async (row: UsageRecord) => void rows.push(row) } } as unknown as Store;
  const meter = createUsageMeter({
    prices: {
      price: () => ({
        input_per_mtok: 1,
        output_per_mtok: 2,
        cached_input_per_mtok: 0.1,
        cache_write_per_mtok: 1.25,
        currency: "USD",
        as_of: "config",
        source: "config",
      }),
    },
    hooks,
    store: () => store,
    log: quiet,
  });
  return { meter, asked };
}

describe("meteredCall: a call after a turn (a reflection, a summary)", () => {
  it("is booked under the turn it follows, with its origin, tokens and price, once it ends", async () => {
    const rows: UsageRecord[] = [];
    const { meter } = meterWith(rows, "none");
    const { d } = driver();
    const reply = await meteredCall(meter, CALL, d, MODEL, (metered) => metered.complete(REQUEST));
    expect(reply.text).toBe("ok");
    expect(rows).toEqual([
      expect.objectContaining({
        fighter_id: "f1",
        bout_id: "b1",
        turn_id: "t1",
        origin: "channel:telegram:42",
        input_tokens: 10,
        output_tokens: 5,
        cost_micros: 20,
        currency: "USD",
      }),
    ]);
  });

  it("is stopped by a budget with on_exceed = ask without asking anyone, and is never sent", async () => {
    const rows: UsageRecord[] = [];
    const { meter, asked } = meterWith(rows, "over");
    const { d, calls } = driver();
    await expect(meteredCall(meter, CALL, d, MODEL, (metered) => metered.complete(REQUEST))).rejects.toThrow(
      /BUDGET_EXCEEDED|used up \(no one asked\)/,
    );
    expect(asked).toEqual([]);
    expect(calls()).toBe(0);
    expect(rows).toEqual([]);
  });
});
