import { describe, expect, it } from "vitest";
import { isSparError } from "./errors.js";
import type { EventBus } from "./events.js";
import { scopeEvents, scopeRing } from "./plugin-scope.js";
import type { RingServices } from "./services.js";

/** Enough of the Ring's services to see which a scoped view lets through. */
function services(): RingServices {
  let opened = false;
  return {
    version: "1.2.3",
    startedAt: new Date(0),
    get clustered() {
      return opened;
    },
    fighters: { list: async () => [] },
    // Looked up on each use, as the Ring's store groups are.
    get bouts() {
      opened = true;
      return { messages: async () => [] };
    },
    llm: { complete: async () => ({}) },
  } as unknown as RingServices;
}

describe("scopeRing", () => {
  it("hands the declared groups and the scalars through, getters included", async () => {
    const ring = scopeRing(services(), "moves-dice", ["fighters", "bouts"]);
    expect(ring.version).toBe("1.2.3");
    expect(ring.startedAt).toEqual(new Date(0));
    expect(ring.clustered).toBe(false);
    expect(await ring.fighters.list()).toEqual([]);
    expect(ring.bouts).toBeDefined();
    expect(ring.clustered).toBe(true);
  });

  it("refuses an undeclared group when it is reached for, naming the plugin and the group", () => {
    const ring = scopeRing(services(), "moves-web", []);
    let caught: unknown;
    try {
      void ring.fighters;
    } catch (err) {
      caught = err;
    }
    expect(isSparError(caught, "PLUGIN_INVALID")).toBe(true);
    expect((caught as Error).message).toBe(
      'plugin moves-web uses ring.fighters, which its plugin.json does not declare in "uses"',
    );
    expect((caught as { extra?: unknown }).extra).toEqual({ plugin: "moves-web", group: "fighters" });
    // Declared or not, a group the Ring lacks is simply not there; other keys pass untouched.
    expect(() => scopeRing(services(), "moves-web", ["llm"]).llm).not.toThrow();
    expect((ring as unknown as Record<string, unknown>).toJSON).toBeUndefined();
  });

  it("gives a plugin without `uses` the scalars only", () => {
    const ring = scopeRing(services(), "compaction-truncate");
    expect(ring.version).toBe("1.2.3");
    expect(() => ring.llm).toThrow(/compaction-truncate uses ring\.llm/);
  });
});

describe("scopeEvents", () => {
  it("publishes the kinds the manifest declares, refuses others naming plugin and kind, reads through", () => {
    const published: unknown[] = [];
    const bus = {
      publish: (payload: unknown) => published.push(payload),
      lastSeq: 7,
    } as unknown as EventBus;
    const events = scopeEvents(bus, "moves-dice", ["dice.rolled"]);
    events.publish({ kind: "dice.rolled" } as unknown as Parameters<EventBus["publish"]>[0]);
    expect(published).toEqual([{ kind: "dice.rolled" }]);
    expect(() =>
      events.publish({ kind: "fighter.spawned" } as unknown as Parameters<EventBus["publish"]>[0]),
    ).toThrow(
      'plugin moves-dice published "fighter.spawned", which its plugin.json does not declare in contributes.events',
    );
    expect(published).toHaveLength(1);
    expect(events.lastSeq).toBe(7);
  });
});
