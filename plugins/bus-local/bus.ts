/** The in-process bus: `bus-local`'s events, quota windows and budget counters, as the kernel's `Bus`. */
import type { Bus, BusOpenOptions, TurnLease } from "../../sdk/index.js";
import { createBudgetCounters } from "./budget-counters.js";
import { createEventBus } from "./events.js";
import { createQuotaWindow } from "./quota-window.js";

/** Granted at once, never lost: the fighter's queue in this process already orders its turns. */
const LOCAL_LEASE: TurnLease = {
  fence: 0,
  lost: new AbortController().signal,
  release: async () => undefined,
};

/** Opens the in-process bus. `now` moves the quota windows' and budget counters' clock in tests. */
export function createLocalBus(options: BusOpenOptions & { now?: () => number }): Bus {
  const window = createQuotaWindow({ windowMs: options.quotaWindowMs, now: options.now });
  return {
    events: createEventBus(options),
    quotas: {
      admit: async (fighterId, limits, tokens) => window.admit(fighterId, limits, tokens),
      start: async (reservation, limits) => window.start(reservation, limits),
      settle: async (reservation, tokens) => window.settle(reservation, tokens),
      freesInMs: async (fighterId, limits) => window.freesInMs(fighterId, limits),
    },
    budgets: createBudgetCounters(options.now),
    leases: { acquire: async () => LOCAL_LEASE },
    shared: false,
    close: async () => undefined,
  };
}
