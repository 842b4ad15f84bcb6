import { describe, expect, it } from "vitest";
import { createEventBus } from "./events.js";

describe("bus-local events", () => {
  it("stamps increasing seq, keeps a bounded history and resumes from a seq", async () => {
    const bus = createEventBus({ historySize: 3 });
    const seen: number[] = [];
    bus.subscribe((e) => seen.push(e.seq));
    for (let i = 0; i < 5; i++) bus.publish({ kind: "fighter.status", fighter_id: "f", status: "idle" });
    expect(seen).toEqual([1, 2, 3, 4, 5]);
    expect((await bus.since(0)).map((e) => e.seq)).toEqual([3, 4, 5]);
    expect((await bus.since(4)).map((e) => e.seq)).toEqual([5]);
    expect(bus.lastSeq).toBe(5);
  });

  it("keeps delivering when a listener throws", () => {
    const errors: unknown[] = [];
    const bus = createEventBus({ historySize: 10, onListenerError: (err) => errors.push(err) });
    const seen: string[] = [];
    bus.subscribe(() => {
      throw new Error("bad listener");
    });
    const stop = bus.subscribe((e) => seen.push(e.kind));
    bus.publish({ kind: "fighter.spawned", fighter_id: "f", name: "n" });
    stop();
    bus.publish({ kind: "fighter.killed", fighter_id: "f", name: "n" });
    expect(seen).toEqual(["fighter.spawned"]);
    expect(errors).toHaveLength(2);
  });
});

describe("event history", () => {
  it("keeps lifecycle events for resuming, not streamed text deltas", async () => {
    const bus = createEventBus({ historySize: 10 });
    bus.publish({ kind: "bout.started", fighter_id: "f", bout_id: "b" });
    bus.publish({ kind: "message.delta", fighter_id: "f", bout_id: "b", text: "x".repeat(10_000) });
    bus.publish({ kind: "fighter.status", fighter_id: "f", status: "idle" });
    expect((await bus.since(0)).map((e) => [e.seq, e.kind])).toEqual([
      [1, "bout.started"],
      [3, "fighter.status"],
    ]);
  });
});
