/**
 * Runs due schedules: one timer for the soonest, set again after every change. A due schedule is
 * advanced (a one-time one removed, a cron one moved to its next run) before its message is sent,
 * so a crash during the turn never repeats it; a schedule missed while the daemon was down runs
 * once when it starts, and a cron one then keeps its rhythm from there.
 */
import type { Logger, RingServices } from "../../sdk/index.js";
import { isSparError } from "../../sdk/index.js";
import type { ScheduleRecord, Schedules } from "./schedules.js";
import { nextCronRun } from "./when.js";

/** setTimeout's longest delay: a schedule further away is looked at again then. */
const MAX_DELAY_MS = 2 ** 31 - 1;

export function scheduledText(schedule: ScheduleRecord): string {
  const how = schedule.cron
    ? ` (cron ${schedule.cron}${schedule.timezone ? ` ${schedule.timezone}` : ""})`
    : "";
  return `[scheduled message ${schedule.id}${how}]\n${schedule.message}`;
}

export function createScheduleRunner(deps: {
  ring: RingServices;
  schedules: Schedules;
  log: Logger;
  now?: () => number;
}) {
  const { ring, schedules, log } = deps;
  const now = deps.now ?? Date.now;
  let timer: NodeJS.Timeout | undefined;
  let stopped = true;
  const inFlight = new Set<Promise<void>>();

  async function arm(): Promise<void> {
    clearTimeout(timer);
    timer = undefined;
    if (stopped) return;
    const soonest = await schedules.soonest();
    if (!soonest || stopped) return;
    const delay = Math.min(MAX_DELAY_MS, Math.max(0, Date.parse(soonest.next_run_at) - now()));
    timer = setTimeout(
      () => void tick().catch((err: unknown) => log.warn("schedules: tick failed", { error: String(err) })),
      delay,
    );
  }

  async function tick(): Promise<void> {
    const due = await schedules.due(new Date(now()).toISOString());
    for (const schedule of due) {
      const run = fire(schedule).finally(() => inFlight.delete(run));
      inFlight.add(run);
    }
    await arm();
  }

  async function fire(schedule: ScheduleRecord): Promise<void> {
    const at = new Date(now());
    let next: string | undefined;
    try {
      next = schedule.cron ? nextCronRun(schedule.cron, schedule.timezone, at).toISOString() : undefined;
    } catch {
      next = undefined; // a cron that can no longer run ends with this run
    }
    await schedules.ran(schedule.id, {
      at: at.toISOString(),
      status: "running",
      ...(next ? { next_run_at: next } : {}),
    });
    let status = "completed";
    try {
      // The fighter's latest scheduled bout, never a user's conversation (nor a channel chat's).
      await ring.fighters.message(schedule.fighter_id, scheduledText(schedule), { origin: "schedule" });
    } catch (err) {
      status = isSparError(err) ? err.code : "INTERNAL";
      if (status === "FIGHTER_NOT_FOUND") {
        await schedules.remove(schedule.id);
        return;
      }
      log.warn("schedules: a scheduled message failed", { schedule: schedule.id, error: String(err) });
    }
    if (next) await schedules.ran(schedule.id, { at: at.toISOString(), status, next_run_at: next });
  }

  return {
    /** The store is open: run what is due and arm the timer. */
    async start(): Promise<void> {
      stopped = false;
      await tick();
    },
    /** A schedule was added or removed: the soonest may have changed. */
    changed: () => arm(),
    async stop(): Promise<void> {
      stopped = true;
      clearTimeout(timer);
      await Promise.allSettled([...inFlight]);
    },
  };
}
