/**
 * A gorilla caged by its budget is unleashed when the budget's period turns, on a test clock (fake
 * timers, no sleeps); an operator who cages or unleashes it meanwhile takes it over; a restart
 * finds the cage recorded and keeps to it.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Collection } from "../../sdk/index.js";
import { type BudgetCageRecord, createBudgetCages } from "./budget-cage.js";

/** The collection's few calls the cages make, over a Map (the store's own are tested elsewhere). */
function memoryCages(rows = new Map<string, BudgetCageRecord>()) {
  return {
    rows,
    collection: {
      get: async (key: string) => rows.get(key),
      put: async (doc: BudgetCageRecord) => {
        rows.set(doc.name, doc);
        return doc;
      },
      delete: async (key: string) => rows.delete(key),
      find: async () => [...rows.values()],
    } as unknown as Collection<BudgetCageRecord>,
  };
}

const log = { info() {}, warn() {}, error() {} };
const UNTIL = "2025-06-17T23:00:00.000Z";

describe("budget cages", () => {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(new Date("2025-06-17T15:00:00.000Z"));
  });
  afterEach(() => vi.useRealTimers());

  function setup(rows?: Map<string, BudgetCageRecord>) {
    const store = memoryCages(rows);
    const calls: string[] = [];
    const shown = new Map<string, BudgetCageRecord | undefined>();
    const cages = createBudgetCages({
      cages: store.collection,
      cage: async (name) => calls.push(`cage ${name}`),
      unleash: async (name) => calls.push(`unleash ${name}`),
      changed: (name, cage) => shown.set(name, cage),
      log,
    });
    return { store, calls, shown, cages };
  }

  it("cages with the reason, and unleashes when the period turns", async () => {
    const { store, calls, shown, cages } = setup();
    await cages.caged(
      "nightly",
      "gorilla:nightly:daily",
      "the budget gorilla:nightly:daily is used up",
      UNTIL,
    );
    expect(calls).toEqual(["cage nightly"]);
    expect(shown.get("nightly")).toMatchObject({ reason: expect.stringMatching(/used up/), until: UNTIL });
    await vi.advanceTimersByTimeAsync(8 * 3_600_000 - 1000);
    expect(calls).toEqual(["cage nightly"]);
    await vi.advanceTimersByTimeAsync(1000);
    expect(calls).toEqual(["cage nightly", "unleash nightly"]);
    expect(store.rows.size).toBe(0);
    expect(shown.get("nightly")).toBeUndefined();
  });

  it("leaves a gorilla the operator caged or unleashed meanwhile to them", async () => {
    const { calls, cages } = setup();
    await cages.caged("nightly", "gorilla:nightly:daily", "over", UNTIL);
    await cages.forget("nightly");
    await vi.advanceTimersByTimeAsync(9 * 3_600_000);
    expect(calls).toEqual(["cage nightly"]);
  });

  it("keeps to a cage recorded before a restart: unleashed at once when its time has passed", async () => {
    const rows = new Map<string, BudgetCageRecord>([
      ["late", { name: "late", budget: "b", reason: "over", until: UNTIL, at: UNTIL }],
      ["due", { name: "due", budget: "b", reason: "over", until: "2025-06-17T14:00:00.000Z", at: UNTIL }],
    ]);
    const { calls, cages } = setup(rows);
    await cages.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(calls).toEqual(["unleash due"]);
    await vi.advanceTimersByTimeAsync(8 * 3_600_000);
    expect(calls).toEqual(["unleash due", "unleash late"]);
  });

  it("waits past Node's longest timer for a monthly budget", async () => {
    const { calls, cages } = setup();
    await cages.caged("monthly", "gorilla:monthly:monthly", "over", "2025-07-17T23:00:00.000Z");
    await vi.advanceTimersByTimeAsync(30 * 24 * 3_600_000);
    expect(calls).toEqual(["cage monthly"]);
    await vi.advanceTimersByTimeAsync(24 * 3_600_000);
    expect(calls).toEqual(["cage monthly", "unleash monthly"]);
  });
});
