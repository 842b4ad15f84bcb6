/**
 * A troop task's steps pass their output on: once a step's turn was tainted, every step started
 * after it starts tainted too (by that member and what its turn had read); before it, none is.
 */
import { describe, expect, it } from "vitest";
import type { MessageOptions, RingServices, TaintSource, TroopStrategy } from "../../sdk/index.js";
import type { TroopRecord, TroopTaskRecord } from "../../sdk/kits/troops.js";
import { runTask, stepTaint } from "./task-run.js";
import type { TroopData } from "./troop-data.js";

const page: TaintSource = { kind: "web", detail: "https://evil.test/", move: "web_fetch" };

describe("troop steps and taint", () => {
  it("taints the steps after a tainted one, with the member and its sources", async () => {
    const seeds: { fighter: string; taint?: readonly TaintSource[] }[] = [];
    const ring = {
      fighters: {
        get: async (id: string) => ({
          id,
          name: `${id}-name`,
          description: "",
          capabilities: [],
          skills: [],
        }),
        message: async (fighter: string, _text: string, options: MessageOptions) => {
          seeds.push({ fighter, ...(options.taint ? { taint: options.taint } : {}) });
          return {
            bout_id: `b-${fighter}`,
            response: `${fighter} says`,
            usage: { input_tokens: 1, output_tokens: 1 },
            // The researcher read a page; the others read nothing themselves.
            ...(fighter === "researcher" ? { taint: [page] } : {}),
          };
        },
      },
      bouts: { turns: async () => [] },
    } as unknown as RingServices;
    const troop: TroopRecord = {
      id: "t1",
      name: "crew",
      leader: "lead",
      members: ["researcher", "writer"],
      strategy: "pipeline",
      created_at: "2026-01-01T00:00:00.000Z",
    };
    const record: TroopTaskRecord = {
      id: "k1",
      troop_id: "t1",
      task: "write it up",
      strategy: "pipeline",
      status: "pending",
      result: null,
      steps: [],
      error: null,
      partial: false,
      usage: { input_tokens: 0, output_tokens: 0 },
      created_at: "2026-01-01T00:00:00.000Z",
      started_at: null,
      finished_at: null,
    };
    const strategy: TroopStrategy = {
      name: "pipeline",
      async run(task) {
        const first = await task.step("lead", task.task, "work");
        const second = await task.step("researcher", first.output ?? "", "work");
        const third = await task.step("writer", second.output ?? "", "work");
        return { result: third.output ?? "" };
      },
    } as TroopStrategy;
    const active = runTask(troop, record, strategy, {
      ring,
      troops: { tasks: { save: async () => undefined }, rotate: async () => 0 } as unknown as TroopData,
      events: { publish: () => undefined } as never,
      log: { info() {}, warn() {}, error() {} },
      max_parallel: 2,
    });
    expect((await active.done).status).toBe("completed");
    expect(seeds).toEqual([
      { fighter: "lead" },
      { fighter: "researcher" },
      { fighter: "writer", taint: [{ kind: "fighter", detail: "researcher-name" }, page] },
    ]);
  });

  it("adds each source once", () => {
    const held = [{ kind: "fighter" as const, detail: "a" }, page];
    expect(stepTaint("a", [page], held)).toEqual([]);
    expect(stepTaint("b", [page], held)).toEqual([{ kind: "fighter", detail: "b" }]);
  });
});
