/**
 * Provider faults, end to end: the real daemon talks to the fake OpenAI server through a
 * fault-injecting proxy (test/fakes/fault-proxy.ts). For each fault — latency, a reset connection,
 * a truncated or stalled answer, malformed JSON, 429s with and without Retry-After, 500s — the
 * daemon's answer carries the catalog's code (PROVIDER_ERROR 502, PROVIDER_TIMEOUT 504), retries
 * stay within `max_retries` and the deadline (counted at the proxy), the fighter ends idle, and a
 * success after retries counts one call's tokens, never more.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Fault, type FaultProxy, startFaultProxy } from "../fakes/fault-proxy.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";

const LONG = process.env.SPAR_FAULTS === "long";
/** Each case runs this many times (the retry backoff has jitter). */
const ROUNDS = LONG ? 5 : 1;
const TIMEOUT_S = 3;
const MAX_RETRIES = 3;
const TOKENS = { prompt_tokens: 11, completion_tokens: 7 };

interface Case {
  name: string;
  faults: Fault[];
  /** The answer expected: a reply, or an error code with its status. */
  expect: { status: 200 } | { status: number; code: string };
  /** How many requests the proxy must see: exactly, or at most (jittered backoff against the deadline). */
  requests: number | { atMost: number; atLeast: number };
}

const status = (s: number, retryAfter?: string): Fault => ({ kind: "status", status: s, retryAfter });
const times = (n: number, f: Fault) => Array.from({ length: n }, () => f);

const CASES: Case[] = [
  { name: "latency", faults: [{ kind: "latency", ms: 400 }], expect: { status: 200 }, requests: 1 },
  {
    name: "connection reset, then success",
    faults: [{ kind: "reset" }],
    expect: { status: 200 },
    requests: 2,
  },
  { name: "two 500s, then success", faults: times(2, status(500)), expect: { status: 200 }, requests: 3 },
  {
    name: "429 storm with Retry-After: 0, then success",
    faults: times(3, status(429, "0")),
    expect: { status: 200 },
    requests: 4,
  },
  {
    name: "429 with Retry-After: 1, then success",
    faults: [status(429, "1")],
    expect: { status: 200 },
    requests: 2,
  },
  {
    name: "429 storm without Retry-After",
    faults: times(MAX_RETRIES + 1, status(429)),
    expect: { status: 502, code: "PROVIDER_ERROR" },
    requests: { atLeast: 2, atMost: MAX_RETRIES + 1 },
  },
  {
    name: "429 whose Retry-After passes the deadline",
    faults: [status(429, "60")],
    expect: { status: 502, code: "PROVIDER_ERROR" },
    requests: 1,
  },
  {
    name: "500s past max_retries",
    faults: times(MAX_RETRIES + 1, status(500)),
    expect: { status: 502, code: "PROVIDER_ERROR" },
    requests: { atLeast: 2, atMost: MAX_RETRIES + 1 },
  },
  // A malformed or cut answer is worth another try (the next one may be whole): retried, not kept.
  {
    name: "malformed JSON, then success",
    faults: [{ kind: "malformed" }],
    expect: { status: 200 },
    requests: 2,
  },
  {
    name: "malformed JSON every time",
    faults: times(MAX_RETRIES + 1, { kind: "malformed" }),
    expect: { status: 502, code: "PROVIDER_ERROR" },
    requests: { atLeast: 2, atMost: MAX_RETRIES + 1 },
  },
  {
    name: "truncated answer every time",
    faults: times(MAX_RETRIES + 1, { kind: "truncate", afterBytes: 40 }),
    expect: { status: 502, code: "PROVIDER_ERROR" },
    requests: { atLeast: 1, atMost: MAX_RETRIES + 1 },
  },
  {
    name: "stalled answer",
    faults: [{ kind: "stall", afterBytes: 40 }],
    expect: { status: 504, code: "PROVIDER_TIMEOUT" },
    requests: 1,
  },
];

interface UsageRow {
  input_tokens: number;
  output_tokens: number;
}

describe("provider faults through a fault-injecting proxy", () => {
  let fake: FakeOpenAI;
  let proxy: FaultProxy;
  let home: string;
  let daemon: TestDaemon;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    fake.setDefault(() => ({ text: "fine", usage: TOKENS }));
    proxy = await startFaultProxy(fake.url);
    home = tempHome();
    const port = await freePort();
    // Lines before the first table header belong to [default_model]; reflection would add calls.
    writeConfig(
      home,
      port,
      proxy.url,
      `timeout_s = ${TIMEOUT_S}\nmax_retries = ${MAX_RETRIES}\n\n[creed]\nreflect = false\n`,
    );
    daemon = await startDaemon(home, port);
  });

  afterAll(async () => {
    await daemon?.stop();
    await proxy?.close();
    await fake?.close();
    if (home) removeHome(home);
  });

  const usedTokens = async () => {
    const answer = await daemon.request<Record<string, UsageRow[]>>("GET", "/api/v1/fighters/spar/usage");
    const rows = Object.values(answer.body).find(Array.isArray) ?? [];
    return rows.reduce((n, r) => n + r.input_tokens + r.output_tokens, 0);
  };

  it("answers every fault with the catalog's code, retries within the deadline, counts tokens once", async () => {
    let checked = 0;
    for (let round = 0; round < ROUNDS; round++) {
      for (const c of CASES) {
        proxy.reset();
        proxy.script(...c.faults);
        const before = await usedTokens();
        const answer = await daemon.request<{ error?: { code: string; message: string } }>(
          "POST",
          "/api/v1/fighters/spar/message",
          { message: `case: ${c.name}` },
        );
        const seen = proxy.log.length;
        const fighter = await daemon.request<{ status: string }>("GET", "/api/v1/fighters/spar");
        const spent = (await usedTokens()) - before;
        const got =
          answer.status === 200 ? { status: 200 } : { status: answer.status, code: answer.body.error?.code };
        expect([c.name, got]).toEqual([c.name, c.expect]);
        if (typeof c.requests === "number") expect([c.name, seen]).toEqual([c.name, c.requests]);
        else {
          expect(seen, c.name).toBeGreaterThanOrEqual(c.requests.atLeast);
          expect(seen, c.name).toBeLessThanOrEqual(c.requests.atMost);
        }
        expect([c.name, fighter.body.status]).toEqual([c.name, "idle"]);
        // Tokens of a call that failed were never received; a retried success counts one call.
        const oneCall = TOKENS.prompt_tokens + TOKENS.completion_tokens;
        expect([c.name, spent]).toEqual([c.name, answer.status === 200 ? oneCall : 0]);
        if (answer.status !== 200) expect(answer.body.error?.message, c.name).toMatch(/^openai: /);
        checked++;
      }
    }
    console.log(`provider faults: ${checked} cases, all with catalog codes, fighters idle`);
  }, 300_000);
});
