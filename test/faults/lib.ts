/**
 * Shared pieces of the fault suite (test/faults): which mode runs (`SPAR_FAULTS=long` from
 * `npm run test:faults`, short inside `npm test`), the one-line figures each file prints and
 * asserts, and small HTTP helpers against the real daemon that never throw on a dead socket.
 */
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { ChatCompletionRequestBody, ScriptedReply } from "../fakes/openai-server.js";

export { sleep };

/** True under `npm run test:faults`: the full sizes, and the figures the README quotes. */
export const LONG = process.env.SPAR_FAULTS === "long";

/** Picks the short or the long size. */
export function size(short: number, long: number): number {
  return LONG ? long : short;
}

/** Prints one figure line (`crash safety: 50 kills survived, …`), in both modes. */
export function figure(line: string): void {
  console.log(line);
}

/** A random integer in [min, max]. */
export function between(min: number, max: number): number {
  return min + Math.floor(Math.random() * (max - min + 1));
}

const text = (content: unknown): string => (typeof content === "string" ? content : "");

/**
 * The scripted model of the suites that send mixed traffic: it answers after a random 2 ms to
 * `maxDelayMs`, and a message marked "[tool]" calls memory_store first, so tool calls are in flight.
 */
export function toolOrEcho(maxDelayMs: number): (body: ChatCompletionRequestBody) => ScriptedReply {
  return (body) => {
    const delay_ms = between(2, maxDelayMs);
    const last = body.messages.at(-1);
    if (last?.role === "tool") return { text: `done: ${text(last.content).slice(0, 40)}`, delay_ms };
    const user = text(body.messages.findLast((m) => m.role === "user")?.content);
    if (user.includes("[tool]")) {
      const key = `k-${randomUUID()}`;
      return {
        tool_calls: [{ name: "memory_store", arguments: { key, value: user.slice(0, 60) } }],
        delay_ms,
      };
    }
    return { text: `echo: ${user.slice(0, 60)}`, delay_ms };
  };
}

/** An HTTP answer, or `status: 0` with the network error when none came (a killed daemon). */
export interface Answer<T = unknown> {
  status: number;
  body: T;
  headers: Headers | undefined;
  error?: string;
}

/** POSTs or GETs JSON; a refused or reset connection is `status: 0`, never a throw. */
export async function call<T = unknown>(
  url: string,
  method: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Answer<T>> {
  try {
    const response = await fetch(url, {
      method,
      headers: body === undefined ? headers : { "content-type": "application/json", ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return {
      status: response.status,
      body: (text ? JSON.parse(text) : undefined) as T,
      headers: response.headers,
    };
  } catch (err) {
    return { status: 0, body: undefined as T, headers: undefined, error: String(err) };
  }
}

/** Runs `work` over `items` with at most `limit` running at once; results keep the input order. */
export async function pool<I, O>(items: I[], limit: number, work: (item: I) => Promise<O>): Promise<O[]> {
  const results: O[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index] as I);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** Polls `probe` until it returns something truthy; fails naming `what` after `withinMs`. */
export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined | false>,
  withinMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline) {
    const value = await probe();
    if (value) return value;
    await sleep(50);
  }
  throw new Error(`timed out waiting for ${what}`);
}
