import { describe, expect, it } from "vitest";
import { mapBounded } from "./bounded.js";

/** Lets pending promise callbacks run (no timers: a macrotask turn). */
const settle = () => new Promise((resolve) => setImmediate(resolve));

/** Work items the test finishes by hand, in whatever order it likes. */
function manualWork() {
  const started: number[] = [];
  const finish = new Map<number, (value: string) => void>();
  const run = (item: number) => {
    started.push(item);
    return new Promise<string>((resolve) => finish.set(item, resolve));
  };
  return { started, finish: (item: number) => finish.get(item)?.(`done ${item}`), run };
}

describe("mapBounded", () => {
  it("keeps at most `limit` items in flight and starts the next as one finishes", async () => {
    const work = manualWork();
    const all = mapBounded([0, 1, 2, 3, 4], 2, work.run);
    await settle();
    expect(work.started).toEqual([0, 1]);
    work.finish(1);
    await settle();
    expect(work.started).toEqual([0, 1, 2]);
    work.finish(2);
    work.finish(0);
    await settle();
    expect(work.started).toEqual([0, 1, 2, 3, 4]);
    work.finish(4);
    work.finish(3);
    expect(await all).toEqual(["done 0", "done 1", "done 2", "done 3", "done 4"]);
  });

  it("returns results in the items' order whatever order they finish in", async () => {
    const work = manualWork();
    const all = mapBounded([0, 1, 2], 3, work.run);
    await settle();
    work.finish(2);
    work.finish(0);
    work.finish(1);
    expect(await all).toEqual(["done 0", "done 1", "done 2"]);
  });

  it("runs one at a time when the limit is below one or not a number", async () => {
    for (const limit of [0, -3, Number.NaN]) {
      const work = manualWork();
      const all = mapBounded([0, 1], limit, work.run);
      await settle();
      expect(work.started).toEqual([0]);
      work.finish(0);
      await settle();
      work.finish(1);
      expect(await all).toEqual(["done 0", "done 1"]);
    }
  });

  it("starts nothing more once the signal is aborted, leaving those slots undefined", async () => {
    const controller = new AbortController();
    const work = manualWork();
    const all = mapBounded([0, 1, 2, 3], 2, work.run, controller.signal);
    await settle();
    controller.abort();
    work.finish(0);
    work.finish(1);
    expect(await all).toEqual(["done 0", "done 1", undefined, undefined]);
    expect(work.started).toEqual([0, 1]);
  });

  it("starts nothing when the signal is already aborted", async () => {
    const controller = new AbortController();
    controller.abort();
    const work = manualWork();
    expect(await mapBounded([0, 1], 2, work.run, controller.signal)).toEqual([undefined, undefined]);
    expect(work.started).toEqual([]);
  });

  it("throws the first error after the running items finish, starting no more", async () => {
    const work = manualWork();
    const started: number[] = [];
    const all = mapBounded([0, 1, 2, 3], 2, (item) => {
      started.push(item);
      return item === 0 ? Promise.reject(new Error("boom")) : work.run(item);
    });
    await settle();
    work.finish(1);
    await expect(all).rejects.toThrow("boom");
    expect(started).toEqual([0, 1]);
  });

  it("resolves an empty list to an empty list", async () => {
    expect(await mapBounded([], 4, async () => 1)).toEqual([]);
  });
});
