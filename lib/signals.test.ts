import { describe, expect, it } from "vitest";
import { anySignal } from "./signals.js";

describe("anySignal", () => {
  it("aborts with the reason of whichever source fires first", () => {
    const [a, b] = [new AbortController(), new AbortController()];
    const { signal } = anySignal([a.signal, b.signal]);
    expect(signal.aborted).toBe(false);
    b.abort("b went first");
    a.abort("a too");
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe("b went first");
  });

  it("is aborted at once when a source already was", () => {
    const a = new AbortController();
    a.abort("early");
    const { signal } = anySignal([new AbortController().signal, a.signal]);
    expect(signal.reason).toBe("early");
  });

  it("follows nothing once unlinked", () => {
    const a = new AbortController();
    const { signal, unlink } = anySignal([a.signal]);
    unlink();
    a.abort("late");
    expect(signal.aborted).toBe(false);
  });

  it("is a plain signal, not one Node keeps alive while it has listeners", () => {
    // AbortSignal.any's signals are held by Node while listened to; ours must not be one of them.
    const composite = (s: AbortSignal) => {
      const key = Object.getOwnPropertySymbols(s).find((k) => String(k) === "Symbol(kComposite)");
      return key === undefined ? undefined : (s as unknown as Record<symbol, unknown>)[key];
    };
    expect(composite(AbortSignal.any([new AbortController().signal]))).toBe(true);
    expect(composite(anySignal([new AbortController().signal]).signal)).toBe(false);
  });
});
