import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import type { FighterMessageResult, StoredMessage, TurnRecord } from "../../sdk/index.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  freePort,
  removeHome,
  SPAR_BIN,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";

type ErrorBody = { error: { code: string; message: string } };
type Reply = FighterMessageResult & Partial<ErrorBody>;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A user plugin whose turn.end tap throws: bookkeeping after the commit must not fail the reply. */
function installBrokenTurnEnd(home: string): void {
  const dir = join(home, "plugins", "moves-broken-end");
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, "plugin.json"),
    JSON.stringify({
      id: "moves-broken-end",
      version: "0.1.0",
      kernel: "^0.1.0",
      kind: "moves",
      description: "Throws from turn.end when a message asks it to.",
      entry: "index.js",
      activation: ["onStartup"],
    }),
  );
  writeFileSync(
    join(dir, "index.js"),
    `export default { id: "moves-broken-end", apply({ hooks }) {
      hooks.turn.end.tap((summary) => {
        if (summary.new_messages[0]?.content.includes("break the end")) throw new Error("bookkeeping exploded");
      });
    } };\n`,
  );
}

describe("the message path: durable steps, retries, cancellation and call chains", () => {
  let fake: FakeOpenAI;
  let home: string;
  let port: number;
  let daemon: TestDaemon;

  const start = async () => {
    daemon = await startDaemon(home, port);
  };
  const send = (fighter: string, message: string, headers: Record<string, string> = {}, extra = {}) =>
    fetch(`${daemon.url}/api/v1/fighters/${fighter}/message`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify({ message, ...extra }),
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as Reply }));
  const boutOf = async (fighter: string) =>
    (await daemon.request<{ bouts: { id: string }[] }>("GET", `/api/v1/fighters/${fighter}/bouts`)).body
      .bouts[0]?.id as string;
  const messagesOf = async (bout: string) =>
    (await daemon.request<{ messages: StoredMessage[] }>("GET", `/api/v1/bouts/${bout}/messages`)).body
      .messages;
  const turnsOf = async (bout: string) =>
    (await daemon.request<{ turns: TurnRecord[] }>("GET", `/api/v1/bouts/${bout}/turns`)).body.turns;
  const spawnFighter = (name: string, capabilities: { type: string }[] = [{ type: "memory" }]) =>
    daemon.request("POST", "/api/v1/fighters", {
      manifest: { name, description: name, system_prompt: `You are ${name}.`, capabilities },
    });
  const status = async (fighter: string) =>
    (await daemon.request<{ status: string }>("GET", `/api/v1/fighters/${fighter}`)).body.status;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    port = await freePort();
    writeConfig(home, port, fake.url, "\n[agent]\ntool_timeout_s = 5\n[creed]\nreflect = false\n");
    installBrokenTurnEnd(home);
    await start();
  });

  afterEach(() => fake.reset());

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    removeHome(home);
  });

  it("keeps a move that ran, and its result, when the provider fails on the next call", async () => {
    await spawnFighter("keeper");
    fake.enqueue(
      { tool_calls: [{ name: "memory_store", arguments: { key: "k", value: "v" } }] },
      { status: 400, error_message: "the model refused the request" },
    );
    const reply = await send("keeper", "remember k");
    expect(reply.status).toBe(502);
    const bout = await boutOf("keeper");
    const messages = await messagesOf(bout);
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "tool"]);
    expect(messages[2]?.content).toBe('{"stored":"k"}');
    const [turn] = await turnsOf(bout);
    expect(turn).toMatchObject({ status: "failed", error: { code: "PROVIDER_ERROR" }, iterations: 2 });
    // The next turn's prompt tells the model the move ran, and no turn is left dangling.
    await send("keeper", "what happened?");
    const prompt = fake.requests.at(-1)?.body?.messages ?? [];
    expect(prompt.map((m) => m.role)).toEqual(["system", "user", "assistant", "tool", "assistant", "user"]);
    expect(String(prompt[4]?.content)).toContain("The tool calls above ran");
  });

  it("answers a retry with the same Idempotency-Key from the first attempt, success or failure", async () => {
    const key = randomUUID();
    const first = await send("spar", "once only", { "idempotency-key": key });
    const retry = await send("spar", "once only", { "idempotency-key": key });
    expect(retry).toEqual(first);
    expect(fake.calls()).toHaveLength(1);

    fake.enqueue({ status: 400, error_message: "a request the model refuses" });
    const failKey = randomUUID();
    const failed = await send("spar", "fails once", { "idempotency-key": failKey });
    expect(failed.status).toBe(502);
    const again = await send("spar", "fails once", { "idempotency-key": failKey });
    expect(again).toEqual(failed);
    const bout = await boutOf("spar");
    expect((await messagesOf(bout)).filter((m) => m.content === "fails once")).toHaveLength(1);

    const conflict = await send("spar", "another message", { "idempotency-key": key });
    expect(conflict.status).toBe(409);
    expect(conflict.body.error?.message).toMatch(/was used for a different request/);
  });

  it("runs one turn for concurrent retries with one key", async () => {
    const key = randomUUID();
    fake.enqueue({ text: "slow answer", delay_ms: 300 });
    const replies = await Promise.all(
      [1, 2, 3].map(() => send("spar", "concurrent", { "idempotency-key": key })),
    );
    expect(new Set(replies.map((r) => r.body.turn_id)).size).toBe(1);
    expect(replies.every((r) => r.body.response === "slow answer")).toBe(true);
    expect(fake.calls()).toHaveLength(1);
  });

  it("survives a kill -9 mid-turn: the retry gets the interrupted turn's outcome, never a second turn", async () => {
    await spawnFighter("crash");
    const key = randomUUID();
    fake.enqueue({ text: "too late", delay_ms: 10_000 });
    const pending = send("crash", "during the crash", { "idempotency-key": key }).catch(() => undefined);
    await expect.poll(() => fake.calls().length).toBe(1);
    daemon.process.kill("SIGKILL");
    await pending;
    await daemon.stop();
    await start();
    const retry = await send("crash", "during the crash", { "idempotency-key": key });
    expect(retry.status).toBe(503);
    expect(retry.body.error?.code).toBe("INTERRUPTED");
    const bout = await boutOf("crash");
    expect((await messagesOf(bout)).map((m) => m.content)).toEqual(["during the crash"]);
    expect(await turnsOf(bout)).toEqual([
      expect.objectContaining({ status: "failed", error: expect.objectContaining({ code: "INTERRUPTED" }) }),
    ]);
    expect(fake.calls()).toHaveLength(1);
  });

  it("cancels a turn whose HTTP client disconnects, with no model call after it", async () => {
    await spawnFighter("leaver");
    fake.enqueue(
      { tool_calls: [{ name: "memory_store", arguments: { key: "a", value: "b" } }] },
      { text: "never heard", delay_ms: 5_000 },
    );
    const controller = new AbortController();
    const request = fetch(`${daemon.url}/api/v1/fighters/leaver/message`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ message: "start and leave" }),
      signal: controller.signal,
    }).catch(() => undefined);
    // The turn's second model call comes after a move whose plugin loads on first use: on a loaded
    // two-core machine that can take longer than poll's default second.
    await expect.poll(() => fake.calls().length, { timeout: 15_000 }).toBe(2);
    controller.abort();
    await request;
    await expect.poll(() => status("leaver")).toBe("idle");
    const bout = await boutOf("leaver");
    await expect.poll(async () => (await turnsOf(bout))[0]?.status).toBe("cancelled");
    expect((await turnsOf(bout))[0]?.error?.message).toMatch(/client disconnected/);
    await sleep(300);
    expect(fake.calls()).toHaveLength(2);
  });

  it("cancels the running turn on POST /cancel, and says 409 when none runs", async () => {
    fake.enqueue({ text: "never heard", delay_ms: 5_000 });
    const pending = send("spar", "cancel me");
    await expect.poll(() => fake.calls().length, { timeout: 15_000 }).toBe(1);
    const cancelled = await daemon.request<{ cancelled: boolean; turn_id: string }>(
      "POST",
      "/api/v1/fighters/spar/cancel",
    );
    expect(cancelled.status).toBe(200);
    const answer = await pending;
    expect(answer.status).toBe(409);
    expect(answer.body.error?.code).toBe("CANCELLED");
    expect(await status("spar")).toBe("idle");
    const none = await daemon.request<ErrorBody>("POST", "/api/v1/fighters/spar/cancel");
    expect(none.status).toBe(409);
    expect(none.body.error.message).toMatch(/has no turn running/);
    await sleep(200);
    expect(fake.calls()).toHaveLength(1);
  });

  it("cancels a WebSocket chat on a cancel frame, and keeps chat ids apart between connections", async () => {
    const open = () =>
      new Promise<{ ws: WebSocket; frames: Record<string, unknown>[] }>((done) => {
        const ws = new WebSocket(`ws://127.0.0.1:${port}/api/v1/ws`);
        const frames: Record<string, unknown>[] = [];
        ws.on("message", (d) => frames.push(JSON.parse(String(d))));
        ws.once("open", () => done({ ws, frames }));
      });
    const [a, b] = await Promise.all([open(), open()]);
    await spawnFighter("ws-a");
    await spawnFighter("ws-b");
    fake.setDefault((body) => {
      const last = body.messages.findLast((m) => m.role === "user");
      return { text: `reply to ${String(last?.content).slice(-3)}` };
    });
    a.ws.send(JSON.stringify({ type: "chat", id: "1", fighter_id: "ws-a", message: "from A" }));
    b.ws.send(JSON.stringify({ type: "chat", id: "1", fighter_id: "ws-b", message: "from B" }));
    await expect
      .poll(() => a.frames.some((f) => f.type === "reply") && b.frames.some((f) => f.type === "reply"))
      .toBe(true);
    const deltas = (frames: Record<string, unknown>[]) =>
      frames
        .filter((f) => f.kind === "message.delta")
        .map((f) => f.text)
        .join("");
    expect(deltas(a.frames)).toBe("reply to m A");
    expect(deltas(b.frames)).toBe("reply to m B");

    fake.reset();
    fake.enqueue({ text: "never heard", delay_ms: 5_000 });
    a.ws.send(JSON.stringify({ type: "chat", id: "slow", fighter_id: "ws-a", message: "cancel me" }));
    await expect.poll(() => fake.calls().length).toBe(1);
    a.ws.send(JSON.stringify({ type: "cancel", id: "slow" }));
    await expect
      .poll(() => a.frames.find((f) => f.type === "error" && f.id === "slow"))
      .toMatchObject({ error: { code: "CANCELLED" } });
    expect(await status("ws-a")).toBe("idle");
    await sleep(200);
    expect(fake.calls()).toHaveLength(1);
    a.ws.close();
    b.ws.close();
  });

  it("refuses Alice → Bob → Alice at once, with both bouts clean", async () => {
    await spawnFighter("alice", [{ type: "agent_message" }]);
    await spawnFighter("bob", [{ type: "agent_message" }]);
    fake.enqueue(
      { tool_calls: [{ name: "fighter_message", arguments: { to: "bob", content: "ask alice something" } }] },
      { tool_calls: [{ name: "fighter_message", arguments: { to: "alice", content: "a question back" } }] },
      { text: "bob: could not reach alice" },
      { text: "alice: done" },
    );
    const started = Date.now();
    const reply = await send("alice", "talk to bob");
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(reply.body.response).toBe("alice: done");
    const bobMessages = await messagesOf(await boutOf("bob"));
    const refused = bobMessages.find((m) => m.role === "tool");
    expect(JSON.parse(refused?.content ?? "{}").error).toMatchObject({ code: "CONFLICT" });
    expect(refused?.content).toMatch(/alice → bob → alice/);
    const aliceBout = await boutOf("alice");
    await sleep(300);
    // No ghost Bob → Alice turn lands in Alice's bout afterwards.
    expect((await turnsOf(aliceBout)).map((t) => t.status)).toEqual(["completed"]);
    expect((await messagesOf(aliceBout)).map((m) => m.role)).toEqual([
      "user",
      "assistant",
      "tool",
      "assistant",
    ]);
    expect(fake.calls()).toHaveLength(4);
  });

  it("answers 200 although a turn.end tap fails after the commit, and says so in the log and on the bus", async () => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/api/v1/ws`);
    const events: { kind: string; hook?: string; error?: string }[] = [];
    ws.on("message", (d) => {
      const frame = JSON.parse(String(d));
      if (frame.type === "event") events.push(frame);
    });
    await new Promise((r) => ws.once("open", r));
    ws.send(JSON.stringify({ type: "subscribe", kinds: ["turn.hook_failed"] }));
    await sleep(50);
    const reply = await send("spar", "please break the end");
    expect(reply.status).toBe(200);
    expect(daemon.output()).toMatch(/after a committed turn.*bookkeeping exploded/);
    // In the log file too, naming the fighter, so `spar logs --fighter` finds it.
    const logged = await daemon.cli(["logs", "--fighter", "spar", "--level", "error", "--json"]);
    expect(
      logged.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l)),
    ).toContainEqual(
      expect.objectContaining({
        level: "error",
        msg: "after a committed turn",
        fighter: "spar",
        fighter_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        error: expect.stringContaining("bookkeeping exploded"),
      }),
    );
    await expect.poll(() => events[0]).toMatchObject({ kind: "turn.hook_failed", hook: "turn.end" });
    expect(events[0]?.error).toContain("bookkeeping exploded");
    ws.close();
  });

  it("publishes message.completed after the fighter is idle and its usage recorded", async () => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/api/v1/ws`);
    const events: { kind: string; status?: string; fighter_id?: string }[] = [];
    ws.on("message", (d) => {
      const frame = JSON.parse(String(d));
      if (frame.type === "event") events.push(frame);
    });
    await new Promise((r) => ws.once("open", r));
    ws.send(JSON.stringify({ type: "subscribe", kinds: ["fighter.status", "message.completed"] }));
    await expect.poll(() => ws.readyState).toBe(WebSocket.OPEN);
    await sleep(50);
    await send("spar", "order of events");
    await expect.poll(() => events.some((e) => e.kind === "message.completed")).toBe(true);
    const kinds = events.map((e) => (e.kind === "fighter.status" ? `status:${e.status}` : e.kind));
    expect(kinds).toEqual(["status:fighting", "status:idle", "message.completed"]);
    ws.close();
  });

  it("starts a fresh bout when asked", async () => {
    const before = await boutOf("spar");
    const reply = await send("spar", "new topic", {}, { bout: "new" });
    expect(reply.body.bout_id).not.toBe(before);
    expect(await boutOf("spar")).toBe(reply.body.bout_id);
  });

  it("cancels running turns at shutdown and records them as cancelled", async () => {
    await spawnFighter("sleeper");
    fake.enqueue({ text: "never heard", delay_ms: 10_000 });
    const pending = send("sleeper", "stop the daemon now").catch(() => undefined);
    await expect.poll(() => fake.calls().length).toBe(1);
    await daemon.stop();
    await pending;
    await start();
    const turns = await turnsOf(await boutOf("sleeper"));
    expect(turns).toEqual([
      expect.objectContaining({ status: "cancelled", error: expect.objectContaining({ code: "CANCELLED" }) }),
    ]);
    expect(turns[0]?.error?.message).toMatch(/daemon is stopping/);
  });

  it("cancels the turn when spar chat gets Ctrl-C", async () => {
    await spawnFighter("interrupted");
    fake.enqueue({ text: "never heard", delay_ms: 10_000 });
    const chat = spawn(process.execPath, [SPAR_BIN, "chat", "wait for it", "--fighter", "interrupted"], {
      env: { ...process.env, SPAR_HOME: home, OPENAI_API_KEY: "sk-test-secret-0000" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    chat.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    const exited = new Promise<number | null>((r) => chat.once("exit", (code) => r(code)));
    await expect.poll(() => fake.calls().length, { timeout: 10_000 }).toBe(1);
    chat.kill("SIGINT");
    expect(await exited).toBe(130);
    expect(stderr).toMatch(/cancelled/);
    const bout = await boutOf("interrupted");
    await expect.poll(async () => (await turnsOf(bout))[0]?.status).toBe("cancelled");
    expect(await status("interrupted")).toBe("idle");
  });
});
