/**
 * The quota guard at the door (DESIGN §4 step 2) with the real scheduler, event bus and fighter
 * registry. The guard never touches the store, so the registry is filled with `load`.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createFighterRegistry } from "../../kernel/fighters/fighter-registry.js";
import { createQuotaGuard } from "../../kernel/turns/quota-guard.js";
import { createLocalBus } from "../../plugins/bus-local/bus.js";
import { isSparError, type SparError } from "../../sdk/errors.js";
import type { SparEvent } from "../../sdk/events.js";
import { CAPABILITY_TYPES } from "../../sdk/schemas.js";
import type { FighterManifest } from "../../sdk/types.js";
import { type ConfigOverrides, testConfig } from "./harness.js";

let stop: (() => void) | undefined;

afterEach(() => {
  stop?.();
  stop = undefined;
});

function setup(quotas: ConfigOverrides["quotas"], quota?: FighterManifest["quota"]) {
  const config = testConfig({ quotas });
  const bus = createLocalBus({
    historySize: 1000,
    quotaWindowMs: config.quotas.window_s * 1000,
    onListenerError: () => undefined,
  });
  const { events } = bus;
  const published: SparEvent[] = [];
  events.subscribe((event) => published.push(event));
  const fighters = createFighterRegistry({
    events,
    store: () => {
      throw new Error("the quota guard never reads the store");
    },
    defaultModel: config.default_model,
    modelProblem: () => undefined,
    capabilities: new Set(CAPABILITY_TYPES),
  });
  fighters.load([
    {
      id: "f-alice",
      name: "alice",
      created_at: new Date(0).toISOString(),
      manifest: {
        name: "alice",
        description: "",
        system_prompt: "You are alice.",
        ...(quota ? { quota } : {}),
      },
    },
  ]);
  const guard = createQuotaGuard({ config, events, fighters, windows: () => bus.quotas });
  stop = guard.stop;
  const live = fighters.find("alice");
  return { guard, live, fighters, published };
}

/** The SparError `work` throws (fails the test when it does not throw one). */
async function thrown(work: () => Promise<unknown>): Promise<SparError> {
  try {
    await work();
  } catch (err) {
    if (isSparError(err)) return err;
    throw err;
  }
  throw new Error("expected a SparError");
}

const statuses = (published: SparEvent[]) =>
  published.flatMap((e) => (e.kind === "fighter.status" ? [e.status] : []));

describe("quota guard", () => {
  it("refuses a request over requests_per_minute with RATE_LIMITED, rests the fighter and says so", async () => {
    const { guard, live, published } = setup({ requests_per_minute: 2 });
    await guard.admit(live, 10);
    await guard.admit(live, 10);

    const error = await thrown(() => guard.admit(live, 10));

    expect(error.code).toBe("RATE_LIMITED");
    expect(error.extra).toEqual({ retry_after_s: 60, fighter: "alice" });
    expect(error.message).toBe(
      'fighter "alice" is resting: over its requests per minute quota; retry in 60 s',
    );
    expect(live.status).toBe("resting");
    expect(published.map((e) => e.kind)).toEqual(["fighter.status", "fighter.rate_limited"]);
    expect(published[1]).toMatchObject({
      kind: "fighter.rate_limited",
      fighter_id: "f-alice",
      reason: "requests",
      retry_after_s: 60,
    });
  });

  it("counts reserved tokens at admission, so a burst cannot overrun the token quota", async () => {
    const { guard, live, published } = setup({ tokens_per_minute: 1000 });
    await guard.admit(live, 600);

    const error = await thrown(() => guard.admit(live, 600));

    expect(error.code).toBe("RATE_LIMITED");
    expect(error.message).toContain("over its tokens per minute quota");
    expect(error.extra.retry_after_s).toBe(60);
    expect(published.at(-1)).toMatchObject({ kind: "fighter.rate_limited", reason: "tokens" });
    expect(live.status).toBe("resting");
    // What still fits is admitted.
    expect(await guard.admit(live, 400)).toMatchObject({ fighterId: "f-alice", tokens: 400 });
  });

  it("admits one request into an empty window, however large, and nothing after it", async () => {
    const { guard, live } = setup({ tokens_per_minute: 1000 });

    expect((await guard.admit(live, 50_000)).tokens).toBe(50_000);
    expect((await thrown(() => guard.admit(live, 1))).code).toBe("RATE_LIMITED");
  });

  it("takes a manifest's own quota over the config's", async () => {
    const { guard, live } = setup({ requests_per_minute: 100 }, { requests_per_minute: 1 });
    await guard.admit(live, 1);

    expect((await thrown(() => guard.admit(live, 1))).extra).toMatchObject({ fighter: "alice" });
  });

  it("wakes a resting fighter to idle by itself once its window frees, and admits it again", async () => {
    const { guard, live, published } = setup({ requests_per_minute: 1, window_s: 0.2 });
    await guard.admit(live, 1);
    const error = await thrown(() => guard.admit(live, 1));
    // Retry-After is whole seconds: a window shorter than one still says 1.
    expect(error.extra.retry_after_s).toBe(1);
    expect(live.status).toBe("resting");

    await expect.poll(() => live.status, { timeout: 5000, interval: 50 }).toBe("idle");

    expect(statuses(published)).toEqual(["resting", "idle"]);
    expect(await guard.admit(live, 1)).toMatchObject({ fighterId: "f-alice" });
  });

  it("refuses to start a queued turn when settled usage leaves no room, releasing its reservation", async () => {
    const { guard, live, published } = setup({ tokens_per_minute: 1000 });
    const first = await guard.admit(live, 300);
    const second = await guard.admit(live, 300);
    await guard.start(live, first);
    // The first turn used far more than it reserved.
    await guard.settle(live, first, 900);

    const error = await thrown(() => guard.start(live, second));

    expect(error.code).toBe("RATE_LIMITED");
    expect(error.message).toContain("tokens per minute");
    expect(published.at(-1)).toMatchObject({ kind: "fighter.rate_limited", reason: "tokens" });
    expect(live.status).toBe("resting");
    // The refused turn's 300 no longer count: 900 settled + 100 fits in 1000.
    expect((await guard.admit(live, 100)).tokens).toBe(100);
  });

  it("settle releases the reservation and counts the tokens really used instead", async () => {
    const { guard, live } = setup({ tokens_per_minute: 1000 });
    const reservation = await guard.admit(live, 800);
    expect((await thrown(() => guard.admit(live, 800))).code).toBe("RATE_LIMITED");

    await guard.settle(live, reservation, 100);

    const next = await guard.admit(live, 800);
    expect(next.tokens).toBe(800);
    // 100 spent and 800 reserved: 200 more would not fit.
    expect((await thrown(() => guard.admit(live, 200))).code).toBe("RATE_LIMITED");
    // Settling twice changes nothing.
    await guard.settle(live, reservation, 100);
    expect((await thrown(() => guard.admit(live, 200))).code).toBe("RATE_LIMITED");
  });

  it("leaves a fighting fighter fighting when refused, and rests it when its turn settles", async () => {
    const { guard, live, fighters } = setup({ requests_per_minute: 1 });
    const reservation = await guard.admit(live, 1);
    await guard.start(live, reservation);
    fighters.setStatus(live, "fighting");

    expect((await thrown(() => guard.admit(live, 1))).code).toBe("RATE_LIMITED");
    expect(live.status).toBe("fighting");

    await guard.settle(live, reservation, 5);
    expect(live.status).toBe("resting");
  });

  it("returns a fighter to idle after its turn when it was never refused", async () => {
    const { guard, live, fighters } = setup({});
    const reservation = await guard.admit(live, 1);
    await guard.start(live, reservation);
    fighters.setStatus(live, "fighting");

    await guard.settle(live, reservation, 5);

    expect(live.status).toBe("idle");
    fighters.setStatus(live, "fighting");
    guard.settleStatus(live);
    expect(live.status).toBe("idle");
  });
});
