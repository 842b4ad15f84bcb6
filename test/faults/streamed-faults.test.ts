/**
 * Provider faults on the streamed path: a message sent with `Accept: text/event-stream`, whose
 * answer reaches the client as `delta` events while the model streams, when the model's stream
 * breaks after some text was already sent on: the connection reset, cut in the middle of an event,
 * ended cleanly but early (no finish_reason, no [DONE]), or stalled. The client must get a final
 * `error` event with a catalog code (never a `reply` built from half an answer, never the text
 * twice), the turn must end failed, the fighter idle, and no token counted for the broken call.
 * The chain: daemon → a clean-cut relay (this file) → the fault proxy → the scripted model.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Fault, type FaultProxy, startFaultProxy } from "../fakes/fault-proxy.js";
import { startFakeHttp } from "../fakes/http-fake.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";
import { figure, size } from "./lib.js";

const TIMEOUT_S = 3;
const MAX_RETRIES = 2;
const TOKENS = { prompt_tokens: 11, completion_tokens: 7 };
const TEXT = "one two three four five six seven eight nine ten";
/** The scripted stream's first four events (role, "one ", "two ", "three ") take 900 bytes. */
const AFTER_THREE_WORDS = 900;

interface Case {
  name: string;
  /** A fault for the proxy, or `cleanCutAt`: the relay ends the answer properly after that many bytes. */
  fault?: Fault;
  cleanCutAt?: number;
  code: string;
}

const CASES: Case[] = [
  {
    name: "connection reset after some text",
    fault: { kind: "truncate", afterBytes: AFTER_THREE_WORDS },
    code: "PROVIDER_ERROR",
  },
  {
    name: "stream cut in the middle of an event",
    fault: { kind: "truncate", afterBytes: AFTER_THREE_WORDS + 100 },
    code: "PROVIDER_ERROR",
  },
  {
    name: "stream ended early, without finish_reason or [DONE]",
    cleanCutAt: AFTER_THREE_WORDS,
    code: "PROVIDER_ERROR",
  },
  {
    name: "stream stalled after some text",
    fault: { kind: "stall", afterBytes: AFTER_THREE_WORDS },
    code: "PROVIDER_TIMEOUT",
  },
];

interface SseEvent {
  event: string;
  data: { text?: string; error?: { code: string; message: string } };
}

/** Reads a whole `text/event-stream` answer into its events. */
function parseEvents(body: string): SseEvent[] {
  return body
    .split("\n\n")
    .filter((block) => block.trim() !== "")
    .map((block) => {
      const event = /^event: (.*)$/m.exec(block)?.[1] ?? "message";
      const data = /^data: (.*)$/m.exec(block)?.[1] ?? "null";
      return { event, data: JSON.parse(data) as SseEvent["data"] };
    });
}

/** A relay that passes answers through, or ends them properly (no error) after `cutAt` bytes. */
async function startCleanCutRelay(upstream: string) {
  let cutAt: number | undefined;
  const http = await startFakeHttp(async (req: IncomingMessage, res: ServerResponse, body, signal) => {
    const answer = await fetch(`${upstream}${(req.url ?? "/").replace(/^\/v1/, "")}`, {
      method: req.method,
      headers: { "content-type": "application/json", authorization: String(req.headers.authorization ?? "") },
      body,
      signal,
    });
    res.writeHead(answer.status, {
      "content-type": answer.headers.get("content-type") ?? "application/json",
    });
    const limit = cutAt;
    let sent = 0;
    for await (const chunk of answer.body ?? []) {
      const bytes = Buffer.from(chunk as Uint8Array);
      const part = limit === undefined ? bytes : bytes.subarray(0, Math.max(0, limit - sent));
      sent += part.length;
      res.write(part);
      if (limit !== undefined && sent >= limit) break;
    }
    res.end();
  });
  return {
    url: `http://127.0.0.1:${http.port}/v1`,
    cutNextAt: (bytes: number | undefined) => {
      cutAt = bytes;
    },
    close: () => http.close(),
  };
}

describe("provider faults on the streamed path", () => {
  let fake: FakeOpenAI;
  let proxy: FaultProxy;
  let relay: Awaited<ReturnType<typeof startCleanCutRelay>>;
  let home: string;
  let daemon: TestDaemon;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    fake.setDefault(() => ({ text: TEXT, usage: TOKENS }));
    proxy = await startFaultProxy(fake.url);
    relay = await startCleanCutRelay(proxy.url);
    home = tempHome();
    const port = await freePort();
    writeConfig(
      home,
      port,
      relay.url,
      `timeout_s = ${TIMEOUT_S}\nmax_retries = ${MAX_RETRIES}\n\n[creed]\nreflect = false\n`,
    );
    daemon = await startDaemon(home, port);
  }, 60_000);

  afterAll(async () => {
    await daemon?.stop();
    await relay?.close();
    await proxy?.close();
    await fake?.close();
    if (home) removeHome(home);
  });

  const usedTokens = async () => {
    const answer = await daemon.request<Record<string, { input_tokens: number; output_tokens: number }[]>>(
      "GET",
      "/api/v1/fighters/spar/usage",
    );
    const rows = Object.values(answer.body).find(Array.isArray) ?? [];
    return rows.reduce((n, r) => n + r.input_tokens + r.output_tokens, 0);
  };
  const lastTurn = async () => {
    const bouts = await daemon.request<{ bouts: { id: string; updated_at: string }[] }>(
      "GET",
      "/api/v1/fighters/spar/bouts",
    );
    const bout = [...bouts.body.bouts].sort((a, b) => a.updated_at.localeCompare(b.updated_at)).at(-1);
    const turns = await daemon.request<{ turns: { status: string; error?: { code: string } }[] }>(
      "GET",
      `/api/v1/bouts/${bout?.id}/turns`,
    );
    return turns.body.turns.at(-1);
  };
  const stream = async (message: string) => {
    const response = await fetch(`${daemon.url}/api/v1/fighters/spar/message`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify({ message }),
    });
    return { status: response.status, events: parseEvents(await response.text()) };
  };

  it("ends each broken stream with an error event, a failed turn, an idle fighter, no tokens counted", async () => {
    const rounds = size(1, 5);
    let checked = 0;
    let deltasBeforeError = 0;
    for (let round = 0; round < rounds; round++) {
      for (const c of CASES) {
        proxy.reset();
        if (c.fault) proxy.script(c.fault);
        relay.cutNextAt(c.cleanCutAt);
        const before = await usedTokens();
        const answer = await stream(`streamed case: ${c.name} #${round}`);
        relay.cutNextAt(undefined);
        const deltas = answer.events.filter((e) => e.event === "delta").map((e) => e.data.text ?? "");
        const last = answer.events.at(-1);
        const fighter = await daemon.request<{ status: string }>("GET", "/api/v1/fighters/spar");
        const turn = await lastTurn();
        const spent = (await usedTokens()) - before;
        expect({
          case: c.name,
          status: answer.status,
          last: last?.event,
          code: last?.data.error?.code,
          replies: answer.events.filter((e) => e.event === "reply").length,
          // The text streamed is the start of the answer, once: never repeated by a retry.
          prefix: TEXT.startsWith(deltas.join("")),
          turn: [turn?.status, turn?.error?.code],
          fighter: fighter.body.status,
          spent,
          // Text already reached the client: a retry would send it twice, so there is none.
          requests: proxy.log.length,
        }).toEqual({
          case: c.name,
          status: 200,
          last: "error",
          code: c.code,
          replies: 0,
          prefix: true,
          turn: ["failed", c.code],
          fighter: "idle",
          spent: 0,
          requests: 1,
        });
        expect(deltas.join(""), c.name).not.toBe("");
        deltasBeforeError += deltas.length;
        checked++;
      }
    }
    // A whole stream still works after all that.
    proxy.reset();
    const whole = await stream("a whole streamed answer");
    expect(whole.events.at(-1)?.event).toBe("reply");
    expect(
      whole.events
        .filter((e) => e.event === "delta")
        .map((e) => e.data.text)
        .join(""),
    ).toBe(TEXT);
    figure(
      `provider faults, streamed: ${checked} broken streams (reset, cut mid-event, ended early, stalled) after ${deltasBeforeError} deltas sent, ` +
        "each ended by an error event with a catalog code, no retry, turns failed, fighter idle, tokens counted 0",
    );
  }, 300_000);
});
