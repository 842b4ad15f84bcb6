import { describe, expect, it } from "vitest";
import { parseRetryAfter, providerError } from "../lib/provider-errors.js";
import { isSparError } from "../sdk/errors.js";
import type { LlmDriver, LlmRequest, LlmResponse } from "../sdk/types.js";
import { callProvider } from "./provider-call.js";

const ok: LlmResponse = {
  text: "fine",
  tool_calls: [],
  usage: { input_tokens: 1, output_tokens: 1 },
  stop_reason: "end",
  model: "m",
};

const request: LlmRequest = { model: { provider: "p", model: "m" }, system: "", messages: [], tools: [] };

/** A driver that fails with the given errors in turn, then answers. */
function flaky(failures: unknown[], onCall?: (req: LlmRequest) => void) {
  let calls = 0;
  const driver: LlmDriver = {
    provider: "p",
    probe: async () => "ok",
    async complete(req) {
      calls += 1;
      onCall?.(req);
      const failure = failures.shift();
      if (failure) throw failure;
      return ok;
    },
  };
  return { driver, calls: () => calls };
}

function recordSleeps() {
  const waits: number[] = [];
  return { waits, sleep: async (ms: number) => void waits.push(ms) };
}

describe("callProvider", () => {
  it("retries retryable failures with growing backoff, then answers", async () => {
    const { driver, calls } = flaky([
      providerError("p", "down", { status: 503 }),
      providerError("p", "refused"),
    ]);
    const { waits, sleep } = recordSleeps();
    const reply = await callProvider(driver, request, {
      timeoutMs: 60_000,
      maxRetries: 2,
      baseDelayMs: 100,
      sleep,
    });
    expect(reply.text).toBe("fine");
    expect(calls()).toBe(3);
    expect(waits[0]).toBeGreaterThanOrEqual(50);
    expect(waits[0]).toBeLessThanOrEqual(100);
    expect(waits[1]).toBeGreaterThanOrEqual(100);
    expect(waits[1]).toBeLessThanOrEqual(200);
  });

  it("stops after max_retries and reports the last failure", async () => {
    const { driver, calls } = flaky([1, 2, 3].map(() => providerError("p", "still down", { status: 500 })));
    const err = await callProvider(driver, request, {
      timeoutMs: 60_000,
      maxRetries: 2,
      ...recordSleeps(),
    }).catch((e: unknown) => e);
    expect(isSparError(err, "PROVIDER_ERROR")).toBe(true);
    expect(calls()).toBe(3);
  });

  it("does not retry what would fail the same way", async () => {
    const { driver, calls } = flaky([providerError("p", "bad key", { status: 401 })]);
    await expect(callProvider(driver, request, { timeoutMs: 60_000, maxRetries: 2 })).rejects.toThrow(
      "p: bad key",
    );
    expect(calls()).toBe(1);
  });

  it("honours a 429's retry-after", async () => {
    const { driver } = flaky([providerError("p", "slow down", { status: 429, retryAfterS: 3 })]);
    const { waits, sleep } = recordSleeps();
    await callProvider(driver, request, { timeoutMs: 60_000, maxRetries: 1, sleep });
    expect(waits).toEqual([3000]);
  });

  it("gives up at once when the retry-after would pass the deadline", async () => {
    const { driver, calls } = flaky([providerError("p", "slow down", { status: 429, retryAfterS: 30 })]);
    const err = await callProvider(driver, request, { timeoutMs: 5_000, maxRetries: 3 }).catch(
      (e: unknown) => e,
    );
    expect(isSparError(err, "PROVIDER_ERROR")).toBe(true);
    expect((err as Error).message).toBe("p: slow down");
    expect(calls()).toBe(1);
  });

  it("ends a call that outlives the deadline with PROVIDER_TIMEOUT and aborts the driver's request", async () => {
    let signal: AbortSignal | undefined;
    const hanging: LlmDriver = {
      provider: "p",
      probe: async () => "ok",
      complete: (req) =>
        new Promise((_, reject) => {
          signal = req.signal;
          req.signal?.addEventListener("abort", () => reject(new Error("aborted")));
        }),
    };
    const started = Date.now();
    const err = await callProvider(hanging, request, { timeoutMs: 150, maxRetries: 2 }).catch(
      (e: unknown) => e,
    );
    expect(isSparError(err, "PROVIDER_TIMEOUT")).toBe(true);
    expect((err as Error).message).toBe("p: no complete reply within 0.15 s");
    expect(Date.now() - started).toBeLessThan(1000);
    expect(signal?.aborted).toBe(true);
  });

  it("never retries once text has streamed to the caller", async () => {
    const deltas: string[] = [];
    const { driver, calls } = flaky([providerError("p", "cut off")], (req) => req.onDelta?.("Hel"));
    const err = await callProvider(
      driver,
      { ...request, onDelta: (t) => deltas.push(t) },
      { timeoutMs: 60_000, maxRetries: 2 },
    ).catch((e: unknown) => e);
    expect((err as Error).message).toBe("p: cut off");
    expect(calls()).toBe(1);
    expect(deltas).toEqual(["Hel"]);
  });

  it("wraps a plain error as a PROVIDER_ERROR that is not retried", async () => {
    const { driver, calls } = flaky([new TypeError("bad shape")]);
    await expect(callProvider(driver, request, { timeoutMs: 60_000, maxRetries: 2 })).rejects.toMatchObject({
      code: "PROVIDER_ERROR",
      message: "p: bad shape",
    });
    expect(calls()).toBe(1);
  });
});

describe("parseRetryAfter", () => {
  it("reads seconds and HTTP dates", () => {
    expect(parseRetryAfter("7")).toBe(7);
    expect(parseRetryAfter(new Date(10_000).toUTCString(), 4_000)).toBe(6);
    expect(parseRetryAfter("soon")).toBeUndefined();
    expect(parseRetryAfter(undefined)).toBeUndefined();
  });
});
