import { AsyncLocalStorage } from "node:async_hooks";
import { afterEach, describe, expect, it } from "vitest";
import {
  addObserver,
  type ObservedEnd,
  type ObservedOperation,
  type Observer,
  observe,
  observing,
  outgoingHeaders,
  provideGauge,
  readGauge,
  withIncoming,
} from "./observe.js";

const removers: (() => void)[] = [];
afterEach(() => {
  for (const remove of removers.splice(0)) remove();
});

/** An observer that records what it saw and keeps a current-operation context, as a tracer does. */
function recorder() {
  const current = new AsyncLocalStorage<string>();
  const ended: { op: ObservedOperation; end: ObservedEnd; parent?: string }[] = [];
  const observer: Observer = {
    start(op) {
      const parent = current.getStore();
      const name = op.kind === "move_call" ? op.move : op.kind;
      return {
        within: (work) => current.run(name, work),
        end: (end) => ended.push({ op, end, ...(parent ? { parent } : {}) }),
      };
    },
    incoming: (headers, work) => current.run(`remote:${String(headers.traceparent)}`, work),
    outgoing(headers) {
      headers.traceparent = current.getStore() ?? "none";
    },
  };
  removers.push(addObserver(observer));
  return { ended, current };
}

describe("observe", () => {
  it("runs the work alone while nothing observes", async () => {
    expect(observing()).toBe(false);
    expect(outgoingHeaders()).toBeUndefined();
    expect(
      await observe(
        { kind: "move_call", move: "m" },
        async () => 42,
        () => ({ outcome: "ok" }),
      ),
    ).toBe(42);
    expect(withIncoming({ traceparent: "x" }, () => "ran")).toBe("ran");
  });

  it("runs nested operations in their parent's context and ends each with what `ending` makes", async () => {
    const { ended } = recorder();
    const value = await withIncoming({ traceparent: "00-abc" }, () =>
      observe(
        { kind: "turn", fighter: "ada", origin: "user" },
        async () => {
          const inner = await observe(
            { kind: "move_call", move: "memory_store" },
            async () => outgoingHeaders(),
            (v) => ({ outcome: v ? "ok" : "error" }),
          );
          return inner?.traceparent;
        },
        (v) => ({ outcome: "completed", turn_id: String(v) }),
      ),
    );
    expect(value).toBe("memory_store");
    expect(ended.map((e) => [e.op.kind, e.end.outcome, e.parent])).toEqual([
      ["move_call", "ok", "turn"],
      ["turn", "completed", "remote:00-abc"],
    ]);
  });

  it("rethrows the work's error after ending the operation with it", async () => {
    const { ended } = recorder();
    const failure = new Error("boom");
    await expect(
      observe(
        { kind: "store_commit", store: "sqlite" },
        async () => {
          throw failure;
        },
        (_v, err) => ({ outcome: err === failure ? "error" : "ok" }),
      ),
    ).rejects.toBe(failure);
    expect(ended[0]?.end.outcome).toBe("error");
  });

  it("never fails the work when an observer throws", async () => {
    removers.push(
      addObserver({
        start() {
          throw new Error("observer broke");
        },
        outgoing() {
          throw new Error("observer broke");
        },
      }),
    );
    expect(
      await observe(
        { kind: "channel_delivery", platform: "slack" },
        async () => "posted",
        () => ({ outcome: "ok" }),
      ),
    ).toBe("posted");
    expect(outgoingHeaders()).toBeUndefined();
  });

  it("reads a gauge while it is provided", async () => {
    expect(await readGauge("approvals_pending")).toBeUndefined();
    const withdraw = provideGauge("approvals_pending", async () => 3);
    expect(await readGauge("approvals_pending")).toBe(3);
    withdraw();
    expect(await readGauge("approvals_pending")).toBeUndefined();
  });
});
