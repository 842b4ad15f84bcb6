export interface QuotaLimits {
  requests_per_minute: number;
  tokens_per_minute: number;
}

export type Admission = { ok: true } | { ok: false; reason: "requests" | "tokens"; retry_after_s: number };

export interface Scheduler {
  /**
   * Admits one request for the fighter when its window has room, counting it at once, so that
   * concurrent requests cannot overshoot; otherwise says when the window frees.
   */
  admit(fighterId: string, limits: QuotaLimits): Admission;
  /** Counts the tokens a finished request used against the fighter's window. */
  recordTokens(fighterId: string, tokens: number): void;
  /** Milliseconds until the fighter could be admitted again (0 when it could be now). */
  freesInMs(fighterId: string, limits: QuotaLimits): number;
  forget(fighterId: string): void;
}

interface Window {
  requests: number[];
  tokens: { at: number; count: number }[];
}

/**
 * Per-fighter quotas over a sliding window (60 s by default): requests per minute and tokens per
 * minute. Time is injected so tests can move it.
 */
export function createScheduler(options: { windowMs: number; now?: () => number }): Scheduler {
  const now = options.now ?? Date.now;
  const windows = new Map<string, Window>();

  function windowOf(fighterId: string): Window {
    let w = windows.get(fighterId);
    if (!w) {
      w = { requests: [], tokens: [] };
      windows.set(fighterId, w);
    }
    const since = now() - options.windowMs;
    while (w.requests.length > 0 && (w.requests[0] ?? 0) <= since) w.requests.shift();
    while (w.tokens.length > 0 && (w.tokens[0]?.at ?? 0) <= since) w.tokens.shift();
    return w;
  }

  function blocked(
    w: Window,
    limits: QuotaLimits,
  ): { reason: "requests" | "tokens"; freeAt: number } | undefined {
    if (w.requests.length >= limits.requests_per_minute) {
      // The request that must leave the window before another fits.
      const oldest = w.requests[w.requests.length - limits.requests_per_minute] ?? now();
      return { reason: "requests", freeAt: oldest + options.windowMs };
    }
    let used = w.tokens.reduce((n, t) => n + t.count, 0);
    if (used >= limits.tokens_per_minute) {
      for (const t of w.tokens) {
        used -= t.count;
        if (used < limits.tokens_per_minute) return { reason: "tokens", freeAt: t.at + options.windowMs };
      }
    }
    return undefined;
  }

  return {
    admit(fighterId, limits) {
      const w = windowOf(fighterId);
      const block = blocked(w, limits);
      if (block) {
        return {
          ok: false,
          reason: block.reason,
          retry_after_s: Math.max(1, Math.ceil((block.freeAt - now()) / 1000)),
        };
      }
      w.requests.push(now());
      return { ok: true };
    },
    recordTokens(fighterId, tokens) {
      if (tokens > 0) windowOf(fighterId).tokens.push({ at: now(), count: tokens });
    },
    freesInMs(fighterId, limits) {
      const block = blocked(windowOf(fighterId), limits);
      return block ? Math.max(0, block.freeAt - now()) : 0;
    },
    forget(fighterId) {
      windows.delete(fighterId);
    },
  };
}
