/**
 * scheduler-croner's firing: one timer per unleashed gorilla, set for its next fire from
 * `schedule.next` (croner), so the fire time is a function of the clock and a fire is measured
 * against the time it was due. One process: the runtime's own check keeps one cycle at a time, and
 * a run found `running` at start was left by this daemon's last life.
 */

import type { Logger } from "../../sdk/index.js";
import type { Firing, FiringHost, LoadedGorilla } from "../../sdk/kits/gorillas.js";

/** setTimeout's longest delay: a fire further away is looked at again then. */
const MAX_DELAY_MS = 2 ** 31 - 1;

interface Armed {
  gorilla: LoadedGorilla;
  timer?: NodeJS.Timeout;
  /** The next fire. */
  next?: Date;
}

/** Fires from timers in this process. */
export function createTimerFiring({ log }: { log: Logger }): Firing {
  const armed = new Map<string, Armed>();
  let host: FiringHost | undefined;
  let stopped = false;

  /** Sets the timer for the gorilla's next fire after `after` (none once stopping). */
  function arm(entry: Armed, after = new Date()): void {
    clearTimeout(entry.timer);
    entry.timer = undefined;
    entry.next = undefined;
    if (stopped) return;
    const next = entry.gorilla.schedule.next(after);
    if (!next) return;
    entry.next = next;
    wait(entry, next);
  }

  function wait(entry: Armed, at: Date): void {
    const delay = Math.min(MAX_DELAY_MS, Math.max(0, at.getTime() - Date.now()));
    entry.timer = setTimeout(() => {
      // A timer may wake a millisecond early, or a far fire was cut to setTimeout's longest delay.
      if (Date.now() < at.getTime()) return wait(entry, at);
      // The next fire is armed first, so a slow store never shifts the rhythm; fires a busy process
      // woke too late for are not made up for: the next is after now.
      arm(entry, new Date(Math.max(at.getTime(), Date.now())));
      void host?.fire(entry.gorilla.name, at);
    }, delay);
    entry.timer.unref();
  }

  return {
    catchUpAtStart: true,
    async start(given) {
      host = given;
      const abandoned = await given.records.runs.abandon(new Date().toISOString());
      if (abandoned > 0)
        log.warn("gorilla runs left running by a stopped daemon were recorded failed", { abandoned });
    },
    arm(gorilla) {
      const entry = armed.get(gorilla.name) ?? { gorilla };
      armed.set(gorilla.name, entry);
      arm(entry);
    },
    disarm(gorilla) {
      const entry = armed.get(gorilla.name);
      if (!entry) return;
      clearTimeout(entry.timer);
      armed.delete(gorilla.name);
    },
    next(gorilla) {
      return armed.get(gorilla.name)?.next;
    },
    async stop() {
      stopped = true;
      for (const entry of armed.values()) clearTimeout(entry.timer);
      armed.clear();
    },
  };
}
