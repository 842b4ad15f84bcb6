import { describe, expect, it } from "vitest";
import type { Admission } from "../../sdk/index.js";
import { createQuotaWindow, type QuotaWindow } from "./quota-window.js";

function clock(start = 1_000_000) {
  let t = start;
  return {
    now: () => t,
    advance(ms: number) {
      t += ms;
    },
  };
}

const limits = { requests_per_minute: 3, tokens_per_minute: 1000 };

function settle(admission: Admission, tokens: number, s = current): void {
  if (!admission.ok) throw new Error("expected an admission");
  s?.settle(admission.reservation, tokens);
}
let current: QuotaWindow | undefined;

describe("quota window", () => {
  it("admits requests_per_minute requests in a sliding window, then says when one frees", () => {
    const c = clock();
    const s = createQuotaWindow({ windowMs: 60_000, now: c.now });
    expect(s.admit("f", limits).ok).toBe(true);
    c.advance(10_000);
    expect(s.admit("f", limits).ok).toBe(true);
    c.advance(10_000);
    expect(s.admit("f", limits).ok).toBe(true);
    c.advance(5_000);
    // The first request (at 0) leaves the window at 60 s; it is 25 s now.
    expect(s.admit("f", limits)).toEqual({ ok: false, reason: "requests", retry_after_s: 35 });
    expect(s.freesInMs("f", limits)).toBe(35_000);
    c.advance(35_000);
    expect(s.freesInMs("f", limits)).toBe(0);
    expect(s.admit("f", limits).ok).toBe(true);
    expect(s.admit("f", limits).ok).toBe(false);
  });

  it("refuses once the window's tokens reach tokens_per_minute, until enough leave it", () => {
    const c = clock();
    const s = createQuotaWindow({ windowMs: 60_000, now: c.now });
    current = s;
    const big = { requests_per_minute: 100, tokens_per_minute: 1000 };
    settle(s.admit("f", big), 600);
    c.advance(20_000);
    settle(s.admit("f", big), 500);
    expect(s.admit("f", big)).toEqual({ ok: false, reason: "tokens", retry_after_s: 40 });
    c.advance(40_000);
    expect(s.admit("f", big).ok).toBe(true);
  });

  it("keeps fighters apart, and rounds retry-after up to whole seconds", () => {
    const c = clock();
    const s = createQuotaWindow({ windowMs: 60_000, now: c.now });
    const one = { requests_per_minute: 1, tokens_per_minute: 1000 };
    s.admit("a", one);
    expect(s.admit("b", one).ok).toBe(true);
    c.advance(59_500);
    expect(s.admit("a", one)).toEqual({ ok: false, reason: "requests", retry_after_s: 1 });
  });

  it("admits exactly the quota of a burst, however many arrive at once", () => {
    const s = createQuotaWindow({ windowMs: 60_000, now: clock().now });
    const results = Array.from({ length: 1000 }, () =>
      s.admit("f", { requests_per_minute: 60, tokens_per_minute: 1e9 }),
    );
    expect(results.filter((r) => r.ok)).toHaveLength(60);
  });

  it("reserves a turn's estimate at admission, so a concurrent burst cannot overrun tokens", () => {
    const c = clock();
    const s = createQuotaWindow({ windowMs: 60_000, now: c.now });
    current = s;
    const tight = { requests_per_minute: 1000, tokens_per_minute: 1000 };
    const burst = Array.from({ length: 50 }, () => s.admit("f", tight, 300));
    // Three reservations of 300 fit in 1000; the fourth would not.
    expect(burst.filter((a) => a.ok)).toHaveLength(3);
    for (const a of burst) if (a.ok) settle(a, 280);
    expect(s.admit("f", tight, 300)).toMatchObject({ ok: false, reason: "tokens" });
    expect(s.admit("f", tight, 100).ok).toBe(true);
  });

  it("admits one turn into an empty window even when its estimate exceeds the quota", () => {
    const s = createQuotaWindow({ windowMs: 60_000, now: clock().now });
    current = s;
    const small = { requests_per_minute: 100, tokens_per_minute: 500 };
    const first = s.admit("f", small, 2000);
    expect(first.ok).toBe(true);
    expect(s.admit("f", small, 1)).toMatchObject({ ok: false, reason: "tokens", retry_after_s: 60 });
    settle(first, 0);
    expect(s.admit("f", small, 2000).ok).toBe(true);
  });

  it("releases a reservation once, whatever calls settle again", () => {
    const s = createQuotaWindow({ windowMs: 60_000, now: clock().now });
    current = s;
    const q = { requests_per_minute: 100, tokens_per_minute: 1000 };
    const a = s.admit("f", q, 900);
    settle(a, 100);
    settle(a, 100);
    expect(s.admit("f", q, 900).ok).toBe(true);
  });

  it("lets a queued turn start only while settled usage leaves room for its estimate", () => {
    const s = createQuotaWindow({ windowMs: 60_000, now: clock().now });
    current = s;
    const q = { requests_per_minute: 100, tokens_per_minute: 1000 };
    const turns = Array.from({ length: 8 }, () => s.admit("f", q, 120));
    const admitted = turns.filter((t) => t.ok);
    expect(admitted).toHaveLength(8);
    // Each really uses 400: three start (800 + 120 still fits), then settled usage leaves no room.
    const ran: boolean[] = [];
    for (const t of admitted) {
      if (!t.ok) continue;
      const start = s.start(t.reservation, q);
      ran.push(start.ok);
      if (start.ok) settle(t, 400);
    }
    expect(ran).toEqual([true, true, true, false, false, false, false, false]);
  });
});
