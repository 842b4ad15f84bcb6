import type { SparConfig } from "../../sdk/config.js";
import { SparError } from "../../sdk/errors.js";
import type { Admission, EventBus, QuotaLimits, QuotaWindows, Reservation } from "../../sdk/events.js";
import type { FighterRegistry, LiveFighter } from "../fighters/fighter-registry.js";

/**
 * Quotas at the door (DESIGN §4 step 2): a message is admitted or refused before it is queued, with
 * its estimated tokens reserved, so a burst can overshoot the token quota by at most one turn's
 * estimate error. A refused message puts the fighter to Resting until its window frees, then a timer
 * returns it to Idle by itself. The windows are the bus's, so a cluster bus counts every node's turns.
 */
export function createQuotaGuard(deps: {
  config: SparConfig;
  events: EventBus;
  fighters: FighterRegistry;
  windows: () => QuotaWindows;
}) {
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
      async () => {
        timers.delete(live.row.id);
        if (!deps.fighters.isLive(live) || live.status !== "resting") return;
        const more = await deps.windows().freesInMs(live.row.id, limitsOf(live));
        if (more > 0) return wakeAt(live, Date.now() + more);
        restingUntil.delete(live.row.id);
        if (live.status === "resting") deps.fighters.setStatus(live, "idle");
      },
      Math.max(0, at - Date.now()),
    );
    // A resting fighter must not keep the process alive on its own.
    timer.unref();
    timers.set(live.row.id, timer);
  }

  function refuse(live: LiveFighter, admission: Extract<Admission, { ok: false }>): never {
    const until = Date.now() + admission.retry_after_s * 1000;
    restingUntil.set(live.row.id, Math.max(until, restingUntil.get(live.row.id) ?? 0));
    if (live.status === "idle" || live.status === "resting") deps.fighters.setStatus(live, "resting");
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
  }

  /** The fighter's status once no turn of its runs: resting while refused, else idle. */
  function settleStatus(live: LiveFighter): void {
    const until = restingUntil.get(live.row.id) ?? 0;
    deps.fighters.setStatus(live, until > Date.now() ? "resting" : "idle");
  }

  return {
    /**
     * Counts the message against the fighter's window and reserves `estimatedTokens` (the turn's
     * input plus its max_tokens), or refuses it with RATE_LIMITED.
     */
    async admit(live: LiveFighter, estimatedTokens: number): Promise<Reservation> {
      const admission = await deps.windows().admit(live.row.id, limitsOf(live), estimatedTokens);
      if (admission.ok) return admission.reservation;
      return refuse(live, admission);
    },
    /** Just before the queued turn runs: refuses it (RATE_LIMITED) if settled usage leaves no room. */
    async start(live: LiveFighter, reservation: Reservation): Promise<void> {
      const admission = await deps.windows().start(reservation, limitsOf(live));
      if (!admission.ok) refuse(live, admission);
    },
    settleStatus,
    /** After a turn: its real tokens replace the reservation; it rests if it was refused meanwhile. */
    async settle(live: LiveFighter, reservation: Reservation, tokens: number): Promise<void> {
      try {
        await deps.windows().settle(reservation, tokens);
      } finally {
        settleStatus(live);
      }
    },
    stop(): void {
      for (const timer of timers.values()) clearTimeout(timer);
      timers.clear();
    },
  };
}
