/**
 * The API's request limiter: a fixed window per signing key (or per peer for unsigned requests),
 * shared by HTTP requests and WebSocket chat frames so a client cannot step around it by switching
 * transport. One window of `windowMs`; state for idle clients is dropped when their window ends.
 */
export interface RateLimiter {
  /** Counts one request for `client`; refuses with the seconds until its window frees. */
  take(client: string): { ok: true; remaining: number; resetS: number } | { ok: false; retryAfterS: number };
  readonly max: number;
  close(): void;
}

export function createRateLimiter(options: {
  max: number;
  windowMs: number;
  now?: () => number;
}): RateLimiter {
  const now = options.now ?? Date.now;
  const windows = new Map<string, { count: number; resetAt: number }>();
  // Forgetting finished windows keeps memory bounded by the clients seen in one window.
  const sweep = setInterval(() => {
    const t = now();
    for (const [client, w] of windows) if (w.resetAt <= t) windows.delete(client);
  }, options.windowMs);
  sweep.unref();

  return {
    max: options.max,
    take(client) {
      const t = now();
      let w = windows.get(client);
      if (!w || w.resetAt <= t) {
        w = { count: 0, resetAt: t + options.windowMs };
        windows.set(client, w);
      }
      const resetS = Math.max(1, Math.ceil((w.resetAt - t) / 1000));
      if (w.count >= options.max) return { ok: false, retryAfterS: resetS };
      w.count += 1;
      return { ok: true, remaining: options.max - w.count, resetS };
    },
    close() {
      clearInterval(sweep);
    },
  };
}
