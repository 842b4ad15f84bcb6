import type { SparConfig } from "./config.js";
import { SparError } from "./errors.js";
import type { EventBus } from "./events.js";
import type { FighterRegistry, LiveFighter } from "./fighter-registry.js";
import { createScheduler, type QuotaLimits } from "./scheduler.js";

/**
 * Quotas at the door (DESIGN §4 step 2): a message is admitted or refused before it is queued, so
 * a burst can never overshoot. A refused message puts the fighter to Resting until its window frees,
 * then a timer returns it to Idle by itself.
 */
export function createQuotaGuard(deps: { config: SparConfig; events: EventBus; fighters: FighterRegistry }) {
  const scheduler = createScheduler({ windowMs: deps.config.quotas.window_s * 1000 });
  const restingUntil = new Map<string, number>();
  const timers = new Map<string, NodeJS.Timeout>();

  function limitsOf(live: LiveFighter): QuotaLimits {
    const own = live.row.manifest.quota ?? {};
    return {
      requests_per_minute: own.requests_per_minute ?? deps.config.quotas.requests_per_minute,
      tokens_per_minute: own.tokens_per_minute ?? deps.config.quotas.tokens_per_minute,
    };
  }

  function wakeAt(live: LiveFighter, at: number): void {
    clearTimeout(timers.get(live.row.id));
    const timer = setTimeout(
      () => {
        timers.delete(live.row.id);
        if (!deps.fighters.isLive(live) || live.status !== "resting") return;
        const more = scheduler.freesInMs(live.row.id, limitsOf(live));
        if (more > 0) return wakeAt(live, Date.now() + more);
        restingUntil.delete(live.row.id);
        deps.fighters.setStatus(live, "idle");
      },
      Math.max(0, at - Date.now()),
    );
    // A resting fighter must not keep the process alive on its own.
    timer.unref();
    timers.set(live.row.id, timer);
  }

  return {
    /** Counts the message against the fighter's window, or refuses it with RATE_LIMITED. */
    admit(live: LiveFighter): void {
      const admission = scheduler.admit(live.row.id, limitsOf(live));
      if (admission.ok) return;
      const until = Date.now() + admission.retry_after_s * 1000;
      restingUntil.set(live.row.id, Math.max(until, restingUntil.get(live.row.id) ?? 0));
      if (live.status !== "fighting") deps.fighters.setStatus(live, "resting");
      wakeAt(live, restingUntil.get(live.row.id) ?? until);
      deps.events.publish({
        kind: "fighter.rate_limited",
        fighter_id: live.row.id,
        reason: admission.reason,
        retry_after_s: admission.retry_after_s,
      });
      const what = admission.reason === "requests" ? "requests per minute" : "tokens per minute";
      throw new SparError(
        "RATE_LIMITED",
        `fighter "${live.row.name}" is resting: over its ${what} quota; retry in ${admission.retry_after_s} s`,
        { retry_after_s: admission.retry_after_s, fighter: live.row.name },
      );
    },
    /** After a turn: its tokens count against the window; the fighter rests if it was refused meanwhile. */
    settle(live: LiveFighter, tokens: number): void {
      scheduler.recordTokens(live.row.id, tokens);
      const until = restingUntil.get(live.row.id) ?? 0;
      deps.fighters.setStatus(live, until > Date.now() ? "resting" : "idle");
    },
    stop(): void {
      for (const timer of timers.values()) clearTimeout(timer);
      timers.clear();
    },
  };
}
