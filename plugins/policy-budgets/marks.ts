/**
 * The current period of each kind, never earlier than the latest one seen: its start is stored (the
 * plugin's `periods` collection), so a clock moved back, or a node whose clock is behind, keeps
 * counting against the period already reached instead of opening an earlier one afresh. Read from
 * memory on every call; the store is read once and written once per period that turns.
 */
import type { Collection, PluginData } from "../../sdk/index.js";
import { type Period, type PeriodKind, periodOf } from "./periods.js";

interface Mark extends Record<string, unknown> {
  id: PeriodKind;
  starts_at: number;
}

/** `timeZone` is read at a period's first use: the zone's data (ICU, ~8 MiB) loads with the first budget met. */
export function createPeriodMarks(data: PluginData, timeZone: () => string, now: () => number) {
  const marks = data.periods as Collection<Mark>;
  const current = new Map<PeriodKind, Period>();
  const loaded = new Map<PeriodKind, Promise<number>>();

  const stored = (kind: PeriodKind) => {
    let mark = loaded.get(kind);
    if (!mark) {
      mark = marks.get(kind).then((m) => m?.starts_at ?? 0);
      mark.catch(() => loaded.delete(kind));
      loaded.set(kind, mark);
    }
    return mark;
  };

  async function advance(kind: PeriodKind, period: Period): Promise<void> {
    loaded.set(kind, Promise.resolve(period.starts_at));
    await data.transaction(async (tx) => {
      const mark = (await tx.periods?.get(kind)) as Mark | undefined;
      if ((mark?.starts_at ?? 0) < period.starts_at)
        tx.periods?.put({ id: kind, starts_at: period.starts_at });
    });
  }

  return {
    /** The period a call made now counts in. */
    async of(kind: PeriodKind, at = now()): Promise<Period> {
      const cached = current.get(kind);
      if (cached && at >= cached.starts_at && at < cached.resets_at) return cached;
      let period = periodOf(kind, at, timeZone());
      const mark = await stored(kind);
      if (period.starts_at < mark) period = periodOf(kind, mark, timeZone());
      else if (period.starts_at > mark) await advance(kind, period);
      current.set(kind, period);
      return period;
    },
  };
}

export type PeriodMarks = ReturnType<typeof createPeriodMarks>;
