/**
 * Troops through the real daemon when things go wrong, and across providers: async tasks polled,
 * cancellation, a member killed mid-task, a member resting on its quota, a daemon killed or stopped
 * mid-task, disbanding, the troop events on the WebSocket, and a broadcast across three providers.
 */

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import type { TroopTaskRecord } from "../../lib/troops/records.js";

import { startFakeAnthropic } from "../fakes/anthropic-server.js";
import { startFakeOllama } from "../fakes/ollama-server.js";
import { type ChatCompletionRequestBody, type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import type { FakeLlmServer, ScriptedReply } from "../fakes/scripted.js";
import {
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";

const text = (content: unknown): string =>
  typeof content === "string"
    ? content
    : Array.isArray(content)
      ? content.map((p) => (typeof p?.text === "string" ? p.text : "")).join("")
      : "";

/** How long a "slow" member takes to answer: long enough to act on its task while it runs. */
const SLOW_MS = 20_000;

describe("troops when things go wrong", () => {
  let fake: FakeOpenAI;
  let anthropic: FakeLlmServer;
  let ollama: FakeLlmServer;
  let home: string;
  let port: number;
  let daemon: TestDaemon;
  const keys = { ANTHROPIC_API_KEY: "sk-ant-troops" };

  const nameOf = (body: ChatCompletionRequestBody) =>
    /You are ([a-z-]+)\./.exec(
      body.messages
        .filter((m) => m.role === "system")
        .map((m) => text(m.content))
        .join("\n"),
    )?.[1] ?? "unknown";

  const answer = (body: ChatCompletionRequestBody): ScriptedReply => {
    const name = nameOf(body);
    const input = text(body.messages.findLast((m) => m.role === "user")?.content);
    if (name.startsWith("slow")) return { text: `${name} finally answered`, delay_ms: SLOW_MS };
    if (name === "lead")
      return { text: `synthesis of ${(input.match(/ did:|echo:/g) ?? []).length} answers` };
    return { text: `${name} did: ${input.replace(/\s+/g, " ").slice(0, 200)}` };
  };

  const spawn = async (name: string, extra: Record<string, unknown> = {}) => {
    const res = await daemon.request<{ id: string }>("POST", "/api/v1/fighters", {
      manifest: { name, description: name, system_prompt: `You are ${name}.`, ...extra },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.id;
  };

  const createTroop = async (name: string, leader: string, members: string[], strategy: string) => {
    const res = await daemon.request<{ id: string }>("POST", "/api/v1/troops", {
      name,
      leader,
      members,
      strategy,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.id;
  };

  const submitAsync = async (troop: string, task: string) => {
    const res = await daemon.request<TroopTaskRecord>("POST", `/api/v1/troops/${troop}/tasks`, {
      task,
      async: true,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(["pending", "running"]).toContain(res.body.status);
    return res.body;
  };

  const getTask = async (troop: string, id: string) =>
    (await daemon.request<TroopTaskRecord>("GET", `/api/v1/troops/${troop}/tasks/${id}`)).body;

  /** Polls a task until `test` holds (the daemon answers as the task moves; no timing is asserted). */
  const waitTask = async (troop: string, id: string, test: (t: TroopTaskRecord) => boolean) => {
    for (let i = 0; i < 300; i++) {
      const task = await getTask(troop, id);
      if (test(task)) return task;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`task ${id} never reached the awaited state`);
  };

  const status = async (name: string) =>
    (await daemon.request<{ status: string }>("GET", `/api/v1/fighters/${name}`)).body.status;

  const start = async () => {
    daemon = await startDaemon(home, port, keys);
  };

  beforeAll(async () => {
    [fake, anthropic, ollama] = await Promise.all([
      startFakeOpenAI(),
      startFakeAnthropic(),
      startFakeOllama(),
    ]);
    fake.setDefault(answer);
    home = tempHome();
    port = await freePort();
    writeConfig(
      home,
      port,
      fake.url,
      "\n[creed]\nreflect = false\n\n" +
        `[[providers.endpoints]]\nprovider = "anthropic"\nbase_url = "${anthropic.url}"\n\n` +
        `[[providers.endpoints]]\nprovider = "ollama"\nbase_url = "${ollama.url}"\n`,
    );
    await start();
    for (const name of ["alice", "bob", "lead", "slow"]) await spawn(name);
  }, 60_000);

  afterAll(async () => {
    await daemon?.stop();
    await Promise.all([fake?.close(), anthropic?.close(), ollama?.close()]);
    removeHome(home);
  });

  it("answers 202 to an async task, which can then be polled until it completes", async () => {
    await createTroop("asyncs", "lead", ["alice", "bob"], "broadcast");
    const queued = await submitAsync("asyncs", "count the moons of Mars");
    const done = await waitTask("asyncs", queued.id, (t) => t.status === "completed");
    expect(done.result).toBe("synthesis of 2 answers");
    expect(done.started_at).not.toBeNull();
    expect(done.finished_at).not.toBeNull();
  });

  it("cancels a running task through the API: steps in flight end cancelled, fighters end idle", async () => {
    await createTroop("slowpoke", "lead", ["alice", "slow"], "broadcast");
    const queued = await submitAsync("slowpoke", "take your time");
    await waitTask("slowpoke", queued.id, (t) => t.steps.length === 2);
    const cancelled = await daemon.request<TroopTaskRecord>(
      "POST",
      `/api/v1/troops/slowpoke/tasks/${queued.id}/cancel`,
    );
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.status).toBe("cancelled");
    expect(cancelled.body.error?.code).toBe("CANCELLED");
    const slowStep = cancelled.body.steps.find((s) => s.output === null);
    expect(slowStep?.error?.code).toBe("CANCELLED");
    expect(slowStep?.finished_at).not.toBeNull();
    // No synthesis ran after the cancel.
    expect(cancelled.body.steps.some((s) => s.role === "synthesize")).toBe(false);
    for (const name of ["alice", "slow", "lead"]) expect(await status(name)).toBe("idle");
    const again = await daemon.request<{ error: { code: string } }>(
      "POST",
      `/api/v1/troops/slowpoke/tasks/${queued.id}/cancel`,
    );
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe("CONFLICT");
    expect((await getTask("slowpoke", queued.id)).status).toBe("cancelled");
  });

  it("records a member killed mid-task as a failed step; the pipeline stops", async () => {
    await spawn("slow-victim");
    await createTroop("doomed", "lead", ["slow-victim", "bob"], "pipeline");
    const queued = await submitAsync("doomed", "step into the ring");
    await waitTask("doomed", queued.id, (t) => t.steps.length === 1);
    const killed = await daemon.request("DELETE", "/api/v1/fighters/slow-victim");
    expect(killed.status).toBeLessThan(300);
    const ended = await waitTask(
      "doomed",
      queued.id,
      (t) => t.status !== "running" && t.status !== "pending",
    );
    expect(ended.status).toBe("failed");
    expect(ended.steps).toHaveLength(1);
    expect(ended.steps[0]?.error?.code).toBe("CANCELLED");
    expect(ended.steps[0]?.error?.message).toContain("its fighter was killed");
    expect(ended.steps[0]?.finished_at).not.toBeNull();
    expect(await status("bob")).toBe("idle");
  });

  it("records a member resting on its quota as a failed step, never a hang", async () => {
    await spawn("tired", { quota: { requests_per_minute: 1 } });
    const first = await daemon.request("POST", "/api/v1/fighters/tired/message", { message: "hello" });
    expect(first.status).toBe(200);
    await createTroop("weary", "lead", ["tired"], "round_robin");
    const task = await daemon.request<TroopTaskRecord>("POST", "/api/v1/troops/weary/tasks", {
      task: "one more?",
    });
    expect(task.status).toBe(200);
    expect(task.body.status).toBe("failed");
    expect(task.body.steps[0]?.error?.code).toBe("RATE_LIMITED");
  });

  it("disbands a troop: its running task is cancelled, then the troop and its tasks are gone", async () => {
    await createTroop("shortlived", "lead", ["slow"], "round_robin");
    const queued = await submitAsync("shortlived", "wait for me");
    await waitTask("shortlived", queued.id, (t) => t.steps.length === 1);
    const gone = await daemon.request<{ disbanded: boolean; cancelled_tasks: number }>(
      "DELETE",
      "/api/v1/troops/shortlived",
    );
    expect(gone.status).toBe(200);
    expect(gone.body).toMatchObject({ disbanded: true, cancelled_tasks: 1 });
    expect((await daemon.request("GET", "/api/v1/troops/shortlived")).status).toBe(404);
    expect((await daemon.request("GET", `/api/v1/troops/shortlived/tasks/${queued.id}`)).status).toBe(404);
    expect(await status("slow")).toBe("idle");
  });

  it("streams the troop events on the WebSocket", async () => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/api/v1/ws`);
    const frames: { type: string; kind?: string; task_id?: string }[] = [];
    ws.on("message", (data) => frames.push(JSON.parse(data.toString())));
    await new Promise<void>((done, fail) => {
      ws.once("open", () => done());
      ws.once("error", fail);
    });
    ws.send(
      JSON.stringify({
        type: "subscribe",
        kinds: ["troop.created", "troop.task.started", "troop.step.completed", "troop.task.completed"],
      }),
    );
    await new Promise((r) => setTimeout(r, 200));
    await createTroop("watched", "lead", ["alice", "bob"], "pipeline");
    const task = await daemon.request<TroopTaskRecord>("POST", "/api/v1/troops/watched/tasks", {
      task: "go",
    });
    for (let i = 0; i < 50 && !frames.some((f) => f.kind === "troop.task.completed"); i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    ws.close();
    const kinds = frames.filter((f) => f.type === "event").map((f) => f.kind);
    expect(kinds).toEqual([
      "troop.created",
      "troop.task.started",
      "troop.step.completed",
      "troop.step.completed",
      "troop.task.completed",
    ]);
    expect(frames.find((f) => f.kind === "troop.task.completed")?.task_id).toBe(task.body.id);
  });

  it("completes a broadcast across members on three providers (openai, anthropic, ollama)", async () => {
    await spawn("on-anthropic", {
      model: { provider: "anthropic", model: "claude-fake", base_url: anthropic.url },
    });
    await spawn("on-ollama", { model: { provider: "ollama", model: "llama-fake", base_url: ollama.url } });
    await createTroop("mixed", "lead", ["alice", "on-anthropic", "on-ollama"], "broadcast");
    const task = await daemon.request<TroopTaskRecord>("POST", "/api/v1/troops/mixed/tasks", {
      task: "say hello in your own words",
    });
    expect(task.body.status, JSON.stringify(task.body.error)).toBe("completed");
    const answers = task.body.steps.filter((s) => s.role === "answer");
    expect(answers).toHaveLength(3);
    for (const s of answers) expect(s.error).toBeNull();
    expect(anthropic.calls().some((c) => c.last_user_text.includes("say hello in your own words"))).toBe(
      true,
    );
    expect(ollama.calls().some((c) => c.last_user_text.includes("say hello in your own words"))).toBe(true);
    expect(task.body.result).toBe("synthesis of 3 answers");
  });

  it("marks a task the daemon was killed during as failed, daemon restarted, after the restart", async () => {
    await createTroop("crashy", "lead", ["slow"], "round_robin");
    const queued = await submitAsync("crashy", "survive a crash");
    await waitTask("crashy", queued.id, (t) => t.steps.length === 1);
    daemon.process.kill("SIGKILL");
    await daemon.stop();
    await start();
    const after = await getTask("crashy", queued.id);
    expect(after.status).toBe("failed");
    expect(after.error?.code).toBe("INTERRUPTED");
    expect(after.error?.message).toContain("daemon restarted");
    expect(after.finished_at).not.toBeNull();
    // The troop itself survived, and takes tasks again.
    const troops = await daemon.request<{ troops: { name: string }[] }>("GET", "/api/v1/troops");
    expect(troops.body.troops.map((t) => t.name)).toContain("crashy");
  }, 60_000);

  it("records a task running when the daemon stops as failed, interrupted", async () => {
    const queued = await submitAsync("crashy", "survive a stop");
    await waitTask("crashy", queued.id, (t) => t.steps.length === 1);
    await daemon.stop();
    await start();
    const after = await getTask("crashy", queued.id);
    expect(after.status).toBe("failed");
    expect(after.error?.code).toBe("INTERRUPTED");
    expect(after.steps[0]?.finished_at).not.toBeNull();
  }, 60_000);
});
