import { describe, expect, it } from "vitest";
import { createScheduler } from "./scheduler.js";

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

describe("scheduler", () => {
  it("admits requests_per_minute requests in a sliding window, then says when one frees", () => {
    const c = clock();
    const s = createScheduler({ windowMs: 60_000, now: c.now });
    expect(s.admit("f", limits)).toEqual({ ok: true });
    c.advance(10_000);
    expect(s.admit("f", limits)).toEqual({ ok: true });
    c.advance(10_000);
    expect(s.admit("f", limits)).toEqual({ ok: true });
    c.advance(5_000);
    // The first request (at 0) leaves the window at 60 s; it is 25 s now.
    expect(s.admit("f", limits)).toEqual({ ok: false, reason: "requests", retry_after_s: 35 });
    expect(s.freesInMs("f", limits)).toBe(35_000);
    c.advance(35_000);
    expect(s.freesInMs("f", limits)).toBe(0);
    expect(s.admit("f", limits)).toEqual({ ok: true });
    expect(s.admit("f", limits).ok).toBe(false);
  });

  it("refuses once the window's tokens reach tokens_per_minute, until enough leave it", () => {
    const c = clock();
    const s = createScheduler({ windowMs: 60_000, now: c.now });
    const big = { requests_per_minute: 100, tokens_per_minute: 1000 };
    s.admit("f", big);
    s.recordTokens("f", 600);
    c.advance(20_000);
    s.admit("f", big);
    s.recordTokens("f", 500);
    expect(s.admit("f", big)).toEqual({ ok: false, reason: "tokens", retry_after_s: 40 });
    c.advance(40_000);
    expect(s.admit("f", big)).toEqual({ ok: true });
  });

  it("keeps fighters apart, and rounds retry-after up to whole seconds", () => {
    const c = clock();
    const s = createScheduler({ windowMs: 60_000, now: c.now });
    const one = { requests_per_minute: 1, tokens_per_minute: 1000 };
    s.admit("a", one);
    expect(s.admit("b", one)).toEqual({ ok: true });
    c.advance(59_500);
    expect(s.admit("a", one)).toEqual({ ok: false, reason: "requests", retry_after_s: 1 });
  });

  it("admits exactly the quota of a burst, however many arrive at once", () => {
    const s = createScheduler({ windowMs: 60_000, now: clock().now });
    const results = Array.from({ length: 1000 }, () =>
      s.admit("f", { requests_per_minute: 60, tokens_per_minute: 1e9 }),
    );
    expect(results.filter((r) => r.ok)).toHaveLength(60);
  });
});
