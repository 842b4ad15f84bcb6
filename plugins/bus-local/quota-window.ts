/**
 * The in-process quota windows of `bus-local`: per-fighter sliding windows kept in memory (a
 * restart starts them empty), with running sums so an admission costs the same however busy the
 * window is.
 */
import type { Admission, QuotaLimits, Reservation } from "../../sdk/index.js";

/** The windows as this module keeps them: synchronous; index.ts hands the kernel promises of them. */
export interface QuotaWindow {
  admit(fighterId: string, limits: QuotaLimits, reserveTokens?: number): Admission;
  start(reservation: Reservation, limits: QuotaLimits): Admission;
  settle(reservation: Reservation, tokens: number): void;
  freesInMs(fighterId: string, limits: QuotaLimits): number;
}

/** Running sums beside the lists, so an admission costs the same however busy the window is. */
interface Window {
  requests: number[];
  tokens: { at: number; count: number }[];
  tokenSum: number;
  reserved: Set<Reservation>;
  reservedSum: number;
}

/**
 * Per-fighter quotas over a sliding window (60 s by default): requests per minute and tokens per
 * minute. Tokens are reserved at admission (the turn's estimated input plus its max_tokens) and
 * settled with the real usage afterwards, so a burst of concurrent turns cannot overrun the token
 * quota by more than one turn's estimate error. Time is injected so tests can move it.
 */
export function createQuotaWindow(options: { windowMs: number; now?: () => number }): QuotaWindow {
  const now = options.now ?? Date.now;
  const windows = new Map<string, Window>();

  function windowOf(fighterId: string): Window {
    let w = windows.get(fighterId);
    if (!w) {
      w = { requests: [], tokens: [], tokenSum: 0, reserved: new Set(), reservedSum: 0 };
      windows.set(fighterId, w);
    }
    const since = now() - options.windowMs;
    while (w.requests.length > 0 && (w.requests[0] ?? 0) <= since) w.requests.shift();
    while (w.tokens.length > 0 && (w.tokens[0]?.at ?? 0) <= since) w.tokenSum -= w.tokens.shift()?.count ?? 0;
    return w;
  }

  function release(w: Window, reservation: Reservation): boolean {
    if (!w.reserved.delete(reservation)) return false;
    w.reservedSum -= reservation.tokens;
    return true;
  }

  function blocked(
    w: Window,
    limits: QuotaLimits,
    wanted: number,
  ): { reason: "requests" | "tokens"; freeAt: number } | undefined {
    if (w.requests.length >= limits.requests_per_minute) {
      // The request that must leave the window before another fits.
      const oldest = w.requests[w.requests.length - limits.requests_per_minute] ?? now();
      return { reason: "requests", freeAt: oldest + options.windowMs };
    }
    const reserved = w.reservedSum;
    let used = w.tokenSum + reserved;
    if (used === 0 || used + wanted <= limits.tokens_per_minute) return undefined;
    // Reservations will be settled into the window, so count them as spent now.
    const held = [...w.tokens, ...(reserved > 0 ? [{ at: now(), count: reserved }] : [])];
    for (const t of held) {
      used -= t.count;
      if (used === 0 || used + wanted <= limits.tokens_per_minute)
        return { reason: "tokens", freeAt: t.at + options.windowMs };
    }
    return { reason: "tokens", freeAt: now() + options.windowMs };
  }

  return {
    admit(fighterId, limits, reserveTokens = 1) {
      const w = windowOf(fighterId);
      const block = blocked(w, limits, reserveTokens);
      if (block) {
        return {
          ok: false,
          reason: block.reason,
          retry_after_s: Math.max(1, Math.ceil((block.freeAt - now()) / 1000)),
        };
      }
      w.requests.push(now());
      const reservation: Reservation = { fighterId, tokens: Math.max(0, reserveTokens) };
      w.reserved.add(reservation);
      w.reservedSum += reservation.tokens;
      return { ok: true, reservation };
    },
    start(reservation, limits) {
      const w = windowOf(reservation.fighterId);
      const settled = w.tokenSum;
      if (settled === 0 || settled + reservation.tokens <= limits.tokens_per_minute) {
        return { ok: true, reservation };
      }
      release(w, reservation);
      let left = settled;
      let freeAt = now() + options.windowMs;
      for (const t of w.tokens) {
        left -= t.count;
        if (left === 0 || left + reservation.tokens <= limits.tokens_per_minute) {
          freeAt = t.at + options.windowMs;
          break;
        }
      }
      return { ok: false, reason: "tokens", retry_after_s: Math.max(1, Math.ceil((freeAt - now()) / 1000)) };
    },
    settle(reservation, tokens) {
      const w = windows.get(reservation.fighterId);
      if (!w || !release(w, reservation)) return;
      if (tokens > 0) {
        const current = windowOf(reservation.fighterId);
        current.tokens.push({ at: now(), count: tokens });
        current.tokenSum += tokens;
      }
    },
    freesInMs(fighterId, limits) {
      // Free means room for at least one more token, as a new admission needs.
      const block = blocked(windowOf(fighterId), limits, 1);
      return block ? Math.max(0, block.freeAt - now()) : 0;
    },
  };
}
