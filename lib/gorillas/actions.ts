/**
 * What an operator asks of a gorilla (the routes' POST actions): unleash, cage, and one cycle now.
 * In a cluster the desired state is the store's (another node may have changed it) and the running
 * cycle may be another node's: the firing's `claim` and `announce` reach it.
 */
import { type EventBus, SparError } from "../../sdk/index.js";
import { type Cycle, stopCycle } from "./cycle.js";
import type { CycleSlot, Firing } from "./firing.js";
import type { GorillaDesired, GorillaRecords, GorillaRunRecord, GorillaRunTrigger } from "./records.js";
import type { GorillaEntry, GorillaView } from "./view.js";

/** How long caging or stopping waits for a cycle to wind down and be recorded. */
const WIND_DOWN_MS = 15_000;

/** Waits for `done`, at most WIND_DOWN_MS. */
export async function windDown(done: Promise<void>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([done, new Promise((r) => (timer = setTimeout(r, WIND_DOWN_MS)))]);
  clearTimeout(timer);
}

/** What the actions need of the runtime. */
export interface ActionContext {
  records: GorillaRecords;
  events: EventBus;
  firing: Firing;
  /** The loaded gorilla (GORILLA_NOT_FOUND), once the runtime has started. */
  entry(name: string): Promise<GorillaEntry>;
  view(entry: GorillaEntry): GorillaView;
  begin(
    entry: GorillaEntry,
    trigger: GorillaRunTrigger,
    scheduledAt?: Date,
    slot?: CycleSlot,
  ): { cycle: Cycle; started: Promise<GorillaRunRecord> };
  stopped(): boolean;
}

/** The operator's actions on the runtime's gorillas. */
export function createGorillaActions(ctx: ActionContext) {
  /** The desired state as recorded (another node may have changed it). */
  async function desiredOf(entry: GorillaEntry): Promise<GorillaDesired> {
    entry.desired = (await ctx.records.state(entry.gorilla.name))?.desired ?? "caged";
    return entry.desired;
  }

  return {
    async unleash(name: string): Promise<GorillaView> {
      const entry = await ctx.entry(name);
      if ((await desiredOf(entry)) === "unleashed") {
        throw new SparError("CONFLICT", `the gorilla "${name}" is already unleashed`, { gorilla: name });
      }
      await ctx.records.setDesired(name, "unleashed");
      entry.desired = "unleashed";
      if (!ctx.stopped()) await ctx.firing.arm(entry.gorilla, { restart: false });
      await ctx.firing.announce?.(name, "unleashed");
      const unleashed = ctx.view(entry);
      ctx.events.publish({ kind: "gorilla.unleashed", gorilla: name, next_run_at: unleashed.next_run_at });
      return unleashed;
    },

    /** Cages a gorilla: no more fires, and a running cycle is aborted (answered once it is recorded). */
    async cage(name: string): Promise<GorillaView & { aborted_run_id: string | null }> {
      const entry = await ctx.entry(name);
      const cycle = entry.cycle;
      const wasCaged = (await desiredOf(entry)) === "caged";
      const already = () =>
        new SparError("CONFLICT", `the gorilla "${name}" is already caged`, { gorilla: name });
      // In one process nothing else can be running; in a cluster another node may run its cycle.
      if (wasCaged && !cycle && !ctx.firing.announce) throw already();
      await ctx.records.setDesired(name, "caged");
      entry.desired = "caged";
      await ctx.firing.disarm(entry.gorilla);
      if (cycle) stopCycle(cycle, { outcome: "aborted", reason: "was caged" });
      const elsewhere = await ctx.firing.announce?.(name, "caged");
      if (wasCaged && !cycle && !elsewhere?.run_id) throw already();
      const aborted = cycle?.run_id ?? elsewhere?.run_id ?? null;
      ctx.events.publish({ kind: "gorilla.caged", gorilla: name, aborted_run_id: aborted });
      if (cycle) await windDown(cycle.done);
      else if (elsewhere?.run_id) await windDown(elsewhere.ended);
      return { ...ctx.view(entry), aborted_run_id: aborted };
    },

    /** One cycle now, whatever the state: answered once its run is recorded started. */
    async run(name: string): Promise<GorillaRunRecord> {
      const entry = await ctx.entry(name);
      const busy = (runId: string | undefined) => {
        const which = runId ? ` (run ${runId})` : "";
        return new SparError("CONFLICT", `the gorilla "${name}" is already running a cycle${which}`, {
          gorilla: name,
        });
      };
      if (entry.cycle) throw busy(entry.cycle.run_id);
      if (!ctx.firing.claim) return ctx.begin(entry, "manual").started;
      const claimed = await ctx.firing.claim(name);
      if ("busy" in claimed) throw busy(claimed.busy);
      // A fire may have started one while the slot was being claimed.
      const running = entry.cycle as Cycle | undefined;
      if (running) {
        await claimed.release();
        throw busy(running.run_id);
      }
      return ctx.begin(entry, "manual", undefined, claimed).started;
    },
  };
}
