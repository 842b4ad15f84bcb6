/**
 * The schedules, in this plugin's own collection (`api.data.schedules`, declared in plugin.json):
 * what the moves, the operator's routes and the runner read and write. Soonest first, schedules due
 * at the same time in the order they were added.
 */
import type { Collection, PluginData, RingServices, TxCollection } from "../../sdk/index.js";
import { SparError } from "../../sdk/index.js";

/**
 * A message a fighter scheduled for itself: once at `next_run_at`, or on a cron expression (then
 * `next_run_at` moves on after each run). Kept until removed, run once, or its fighter is gone.
 */
export type ScheduleRecord = {
  id: string;
  fighter_id: string;
  message: string;
  /** A five-field cron expression; absent for a one-time schedule. */
  cron?: string;
  /** IANA time zone the cron expression is read in (default UTC). */
  timezone?: string;
  /** When it runs next (ISO time). */
  next_run_at: string;
  created_at: string;
  last_run_at?: string;
  /** How the last run went: "completed", or the error code it failed with. */
  last_status?: string;
};

/** Schedules one fighter may hold at once. */
export const MAX_PER_FIGHTER = 100;

const SOONEST = { by: ["next_run_at"] } as const;

export interface Schedules {
  /**
   * Adds a schedule for a live fighter (FIGHTER_NOT_FOUND otherwise); CONFLICT when the fighter
   * holds `MAX_PER_FIGHTER` already.
   */
  add(record: ScheduleRecord): Promise<void>;
  get(id: string): Promise<ScheduleRecord | undefined>;
  /** One fighter's schedules, or everyone's; soonest first. */
  list(fighterId?: string): Promise<ScheduleRecord[]>;
  /** The soonest schedule, or those due at `at` (ISO time), soonest first. */
  soonest(): Promise<ScheduleRecord | undefined>;
  due(at: string): Promise<ScheduleRecord[]>;
  /** After a run: when it ran, how it went, and when it runs next (none: it is removed). */
  ran(id: string, run: { at: string; status: string; next_run_at?: string }): Promise<void>;
  /** Removes a schedule (only the fighter's own when `fighterId` is given); false when there was none. */
  remove(id: string, fighterId?: string): Promise<boolean>;
}

export function createSchedules(
  data: PluginData,
  ring: { fighters: Pick<RingServices["fighters"], "get"> },
): Schedules {
  const rows = data.schedules as Collection<ScheduleRecord>;

  /** Every row `where` selects, soonest first, a page at a time (a page holds at most 10,000). */
  async function all(where: Record<string, string | { lte: string }> = {}): Promise<ScheduleRecord[]> {
    const out: ScheduleRecord[] = [];
    for (;;) {
      const after = out.at(-1)?.id;
      const page = await rows.find({ where, order: SOONEST, ...(after ? { after } : {}) });
      out.push(...page);
      if (page.length < 10_000) return out;
    }
  }

  return {
    async add(record) {
      await ring.fighters.get(record.fighter_id); // FIGHTER_NOT_FOUND for one unknown or killed
      await data.transaction(async (tx) => {
        const own = tx.schedules as TxCollection<ScheduleRecord>;
        // A key no schedule has, read first: a transaction holds what it reads, an absent key too,
        // so one fighter's adds take turns and two at once cannot both see room for one more.
        await own.get(`fighter:${record.fighter_id}`);
        const held = await own.count({ fighter_id: record.fighter_id });
        if (held >= MAX_PER_FIGHTER) {
          throw new SparError(
            "CONFLICT",
            `you have ${held} schedules already, the most a fighter may hold; remove one first`,
          );
        }
        own.insert(record);
      });
    },
    get: (id) => rows.get(id),
    list: (fighterId) => all(fighterId === undefined ? {} : { fighter_id: fighterId }),
    async soonest() {
      return (await rows.find({ order: SOONEST, limit: 1 }))[0];
    },
    due: (at) => all({ next_run_at: { lte: at } }),
    async ran(id, run) {
      if (run.next_run_at === undefined) {
        await rows.delete(id);
        return;
      }
      await rows.update(id, { last_run_at: run.at, last_status: run.status, next_run_at: run.next_run_at });
    },
    async remove(id, fighterId) {
      if (fighterId === undefined) return rows.delete(id);
      return data.transaction(async (tx) => {
        const own = tx.schedules as TxCollection<ScheduleRecord>;
        if ((await own.get(id))?.fighter_id !== fighterId) return false;
        own.delete(id);
        return true;
      });
    },
  };
}
