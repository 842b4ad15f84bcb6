import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import type { FighterMessageResult, FighterRecord, SparEvent } from "../../sdk/index.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";

type Frame = { type: string; [key: string]: unknown };

/** A WebSocket client that collects every frame, with a way to wait for one. */
async function connect(url: string) {
  const ws = new WebSocket(url);
  const frames: Frame[] = [];
  const waiters: { test: (f: Frame) => boolean; done: (f: Frame) => void }[] = [];
  ws.on("message", (data) => {
    const frame = JSON.parse(data.toString()) as Frame;
    frames.push(frame);
    for (const w of [...waiters]) {
      if (w.test(frame)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.done(frame);
      }
    }
  });
  await new Promise<void>((done, fail) => {
    ws.once("open", () => done());
    ws.once("error", fail);
  });
  return {
    ws,
    frames,
    send: (frame: unknown) => ws.send(typeof frame === "string" ? frame : JSON.stringify(frame)),
    waitFor(test: (f: Frame) => boolean, timeoutMs = 10_000): Promise<Frame> {
      const seen = frames.find(test);
      if (seen) return Promise.resolve(seen);
      return new Promise((done, fail) => {
        const timer = setTimeout(() => fail(new Error("no such frame arrived")), timeoutMs);
        waiters.push({
          test,
          done: (f) => {
            clearTimeout(timer);
            done(f);
          },
        });
      });
    },
    events: () => frames.filter((f) => f.type === "event") as unknown as (SparEvent & { type: string })[],
  };
}

describe("limits and real time end to end", () => {
  let fake: FakeOpenAI;
  let home: string;
  let daemon: TestDaemon;
  let wsUrl: string;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    home = tempHome();
    const port = await freePort();
    // A 3-request quota over a 3-second window: the behaviour of 3 per minute, at test speed.
    writeConfig(home, port, fake.url, "\n[quotas]\nrequests_per_minute = 3\nwindow_s = 6\n");
    daemon = await startDaemon(home, port);
    wsUrl = `ws://127.0.0.1:${port}/api/v1/ws`;
  });

  afterAll(async () => {
    await daemon?.stop();
    await fake?.close();
    removeHome(home);
  });

  const send = (fighter: string, message: string) =>
    daemon.request<FighterMessageResult & { error?: { code: string; retry_after_s: number } }>(
      "POST",
      `/api/v1/fighters/${fighter}/message`,
      { message },
    );
  const status = async (fighter: string) =>
    (await daemon.request<FighterRecord>("GET", `/api/v1/fighters/${fighter}`)).body.status;

  it("refuses the fourth message in the window with 429, rests, and wakes up by itself", async () => {
    await daemon.request("POST", "/api/v1/fighters", {
      manifest: { name: "busy", description: "d", system_prompt: "p" },
    });
    fake.reset();
    for (let i = 1; i <= 3; i++) expect((await send("busy", `message ${i}`)).status).toBe(200);
    const refused = await send("busy", "message 4");
    expect(refused.status).toBe(429);
    expect(refused.body.error?.code).toBe("RATE_LIMITED");
    expect(refused.body.error?.retry_after_s).toBeGreaterThanOrEqual(1);
    expect(refused.headers.get("retry-after")).toBe(String(refused.body.error?.retry_after_s));
    expect(await status("busy")).toBe("resting");
    // No model call and nothing stored for the refused message.
    expect(fake.requests).toHaveLength(3);
    const bouts = await daemon.request<{ bouts: { message_count: number }[] }>(
      "GET",
      "/api/v1/fighters/busy/bouts",
    );
    expect(bouts.body.bouts[0]?.message_count).toBe(6);

    let now = await status("busy");
    // The window (6 s) leaves room for three turns on a loaded machine; the fighter wakes within it.
    for (let i = 0; i < 100 && now !== "idle"; i++) {
      await new Promise((r) => setTimeout(r, 100));
      now = await status("busy");
    }
    expect(now).toBe("idle");
    expect((await send("busy", "message 5")).status).toBe(200);

    const usage = await daemon.request<{
      usage: { model: string; requests: number }[];
      totals: { requests: number };
    }>("GET", "/api/v1/fighters/busy/usage");
    expect(usage.body.usage).toEqual([
      expect.objectContaining({ provider: "openai", model: "fake-model", requests: 4 }),
    ]);
    expect(usage.body.totals.requests).toBe(4);
  });

  it("streams a chat's events in order over the WebSocket, deltas and a final reply included", async () => {
    const client = await connect(wsUrl);
    client.send({ type: "subscribe", kinds: ["*"] });
    await client.waitFor((f) => f.type === "subscribed");
    await daemon.request("POST", "/api/v1/fighters", {
      manifest: { name: "talker", description: "d", system_prompt: "p" },
    });
    fake.reset();
    fake.enqueue({ text: "one two three four five six" });
    client.send({ type: "chat", id: "req-1", fighter_id: "talker", message: "count for me" });
    const reply = await client.waitFor((f) => f.type === "reply");
    expect(reply).toMatchObject({ id: "req-1", response: "one two three four five six", iterations: 1 });

    const events = client.events();
    const seqs = events.map((e) => e.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
    const kinds = events.map((e) => e.kind);
    const order = [
      "fighter.spawned",
      "bout.started",
      "message.received",
      "message.delta",
      "message.completed",
    ];
    const firstAt = order.map((k) => kinds.indexOf(k as SparEvent["kind"]));
    expect(firstAt.every((i) => i >= 0)).toBe(true);
    expect(firstAt).toEqual([...firstAt].sort((a, b) => a - b));
    const deltas = events.filter((e) => e.kind === "message.delta");
    expect(deltas.length).toBeGreaterThanOrEqual(3);
    expect(deltas.map((e) => (e as { text: string }).text).join("")).toBe("one two three four five six");
    expect(deltas.every((e) => (e as { request_id?: string }).request_id === "req-1")).toBe(true);
    const completed = events.find((e) => e.kind === "message.completed") as {
      usage: { output_tokens: number };
    };
    expect(completed.usage.output_tokens).toBeGreaterThan(0);
    expect(kinds).toContain("creed.updated");
    client.ws.close();

    // Resume: a new connection asking from the spawn's seq gets what followed, in order, without deltas.
    const spawned = events.find((e) => e.kind === "fighter.spawned") as SparEvent;
    const resumed = await connect(wsUrl);
    resumed.send({ type: "subscribe", kinds: ["*"], since: spawned.seq });
    await resumed.waitFor((f) => f.type === "subscribed");
    const replayed = resumed.events();
    expect(replayed[0]?.seq).toBeGreaterThan(spawned.seq);
    const replayedSeqs = replayed.map((e) => e.seq);
    expect(replayedSeqs).toEqual([...replayedSeqs].sort((a, b) => a - b));
    expect(replayed.some((e) => e.kind === "message.delta")).toBe(false);
    // Everything the first client saw after the spawn, but the deltas, is in the replay.
    expect(replayedSeqs).toEqual(
      expect.arrayContaining(
        events.filter((e) => e.seq > spawned.seq && e.kind !== "message.delta").map((e) => e.seq),
      ),
    );
    resumed.ws.close();
  });

  it("filters by kind and fighter, and answers a chat without a subscription", async () => {
    const client = await connect(wsUrl);
    client.send({ type: "subscribe", kinds: ["message.completed"], fighter_id: "nobody-else" });
    await client.waitFor((f) => f.type === "subscribed");
    fake.reset();
    client.send({ type: "chat", id: "req-2", fighter_id: "talker", message: "hi" });
    await client.waitFor((f) => f.type === "reply");
    const events = client.events();
    expect(events.every((e) => e.kind === "message.delta")).toBe(true);
    expect(events.length).toBeGreaterThan(0);
    client.ws.close();
  });

  it("answers bad frames and failed chats with error frames and keeps the connection", async () => {
    const client = await connect(wsUrl);
    client.send("this is not json");
    const notJson = await client.waitFor((f) => f.type === "error");
    expect(notJson.error).toMatchObject({
      code: "VALIDATION_FAILED",
      message: "the frame is not valid JSON",
    });
    client.send({ type: "dance" });
    await client.waitFor(
      (f) => f.type === "error" && String((f.error as { message: string }).message).includes("dance"),
    );
    client.send({ type: "chat", id: "x" });
    await client.waitFor(
      (f) => f.type === "error" && String((f.error as { message: string }).message).includes("fighter_id"),
    );
    client.send({ type: "chat", id: "req-3", fighter_id: "ghost", message: "boo" });
    const missing = await client.waitFor((f) => f.type === "error" && f.id === "req-3");
    expect(missing.error).toMatchObject({ code: "FIGHTER_NOT_FOUND" });
    expect(client.ws.readyState).toBe(WebSocket.OPEN);
    client.send({ type: "subscribe", kinds: ["*"] });
    await client.waitFor((f) => f.type === "subscribed");
    client.ws.close();
  });

  it("answers a frame over 1 MiB with a PAYLOAD_TOO_LARGE error frame before closing with 1009 (issue 28 item 18)", async () => {
    const client = await connect(wsUrl);
    const closed = new Promise<number>((done) => client.ws.once("close", (code) => done(code)));
    client.send(
      JSON.stringify({ type: "chat", id: "big", fighter_id: "talker", message: "x".repeat(2 << 20) }),
    );
    expect(await closed).toBe(1009);
    expect(client.frames).toEqual([
      {
        type: "error",
        error: {
          code: "PAYLOAD_TOO_LARGE",
          message: "a frame is at most 1048576 bytes; this one is larger, so the connection closes (1009)",
          limit_bytes: 1048576,
        },
      },
    ]);
  });

  it("cuts off a client that stops reading, with a notice, and keeps serving everyone else", async () => {
    const slow = await connect(wsUrl);
    slow.send({ type: "subscribe", kinds: ["message.delta"] });
    await slow.waitFor((f) => f.type === "subscribed");
    const closed = new Promise<number>((done) => slow.ws.once("close", (code) => done(code)));
    // Stop reading: the daemon's writes back up once the kernel's buffers are full.
    (slow.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket.pause();

    await daemon.request("POST", "/api/v1/fighters", {
      manifest: { name: "flood", description: "d", system_prompt: "p" },
    });
    fake.reset();
    // 1,200 deltas of 10 KB each (12 MB, well past what loopback buffers) for a client that reads none.
    fake.enqueue({
      text: Array.from({ length: 1200 }, (_, i) => `${String(i).padStart(4, "0")}${"x".repeat(10_000)}`).join(
        " ",
      ),
    });
    const reply = await send("flood", "flood the stream");
    expect(reply.status).toBe(200);

    (slow.ws as unknown as { _socket: { resume(): void } })._socket.resume();
    expect(await closed).toBe(1013);
    const notice = slow.frames.find((f) => f.type === "notice");
    expect(notice).toMatchObject({ code: "SLOW_CONSUMER" });
    expect(slow.frames.filter((f) => f.type === "event").length).toBeLessThan(1200);

    const healthy = await connect(wsUrl);
    healthy.send({ type: "chat", id: "after", fighter_id: "talker", message: "still there?" });
    expect(await healthy.waitFor((f) => f.type === "reply")).toMatchObject({ id: "after" });
    healthy.ws.close();
  });

  it("streams spar chat output as it arrives", async () => {
    await daemon.request("POST", "/api/v1/fighters", {
      manifest: { name: "narrator", description: "d", system_prompt: "p" },
    });
    fake.reset();
    fake.enqueue({ text: "streamed word by word to the terminal" });
    const result = await daemon.cli(["chat", "stream please", "--fighter", "narrator"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe("streamed word by word to the terminal\n");
    // Not a terminal here: no spinner noise on stderr.
    expect(result.stderr).toBe("");
    const json = await daemon.cli(["chat", "again", "--fighter", "narrator", "--json"]);
    expect(JSON.parse(json.stdout)).toMatchObject({ response: "echo: again", iterations: 1 });
  });
});
