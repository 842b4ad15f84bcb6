import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { createLocalBus } from "../../plugins/bus-local/bus.js";
import type { Store } from "../../sdk/store-types.js";
import { createTurnLeases } from "./turn-leases.js";

const bus = createLocalBus({ historySize: 10, quotaWindowMs: 60_000, onListenerError: () => undefined });
const noStore = () => {
  throw new Error("an in-process bus never asks the store to fail orphaned turns");
};

describe("turn leases", () => {
  it("leaves nothing on the in-process bus's shared lease once each turn's lease is released", async () => {
    const leases = createTurnLeases(() => bus, noStore as () => Store);
    const shared = (await bus.leases.acquire("f", new AbortController().signal)).lost;
    for (let i = 0; i < 50; i++) {
      const lease = await leases.take("f", new AbortController());
      expect(lease.fence).toBe(0);
      await lease.release();
    }
    expect(getEventListeners(shared, "abort")).toHaveLength(0);
  });

  it("cancels the turn when the lease is lost while it runs", async () => {
    const lost = new AbortController();
    const released: string[] = [];
    const leases = createTurnLeases(
      () => ({
        ...bus,
        leases: {
          acquire: async () => ({
            fence: 1,
            lost: lost.signal,
            release: async () => void released.push("f"),
          }),
        },
      }),
      noStore as () => Store,
    );
    const turn = new AbortController();
    const lease = await leases.take("f", turn);
    lost.abort(new Error("taken by another node"));
    expect(turn.signal.aborted).toBe(true);
    expect(turn.signal.reason).toEqual(new Error("taken by another node"));
    await lease.release();
    expect(released).toEqual(["f"]);
  });
});
