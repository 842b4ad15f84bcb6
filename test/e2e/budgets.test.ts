/**
 * Budgets end to end (issue 31 item 2): the real daemon from dist, fighters on the fake OpenAI
 * server (which reports usage as the real API does) and a price from `[[pricing]]`. A fighter with a
 * $0.01 daily budget is stopped with 402 at the call the fake's figures say; the budget is shown by
 * GET /api/v1/budgets and `spar budgets`, and holds across kill -9; an evil model looping tool calls
 * is stopped by its budget; `on_exceed = "ask"` asks, and goes on when approved, stops when denied;
 * 50 concurrent turns on one global budget pass it by at most one call's reserved worst case.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BudgetStatus, FighterMessageResult } from "../../sdk/index.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import { freePort, removeHome, startDaemon, type TestDaemon, tempHome } from "../helpers/daemon.js";

// `[[pricing]]`: 1 and 2 USD per million tokens, so a token costs 1 and 2 micro-dollars.
const PRICING = `[[pricing]]\nprovider = "openai"\nmodel = "house-model"\ninput_per_mtok = 1.0\noutput_per_mtok = 2.0\n`;
/** Each call of the fighter under a money budget: 2,000 × 1 + 500 × 2 = 3,000 micro-dollars. */
const CALL = { prompt_tokens: 2000, completion_tokens: 500 };
const CALL_MICROS = 3000;

interface ErrorBody {
  error: { code: string; message: string; budget: string; limit: number; spent: number; resets_at: string };
}

function writeConfigFile(home: string, port: number, url: string, extra = ""): void {
  writeFileSync(
    join(home, "config.toml"),
    `api_listen = "127.0.0.1:${port}"\n\n[default_model]\nprovider = "openai"\nmodel = "house-model"\n` +
      `base_url = "${url}"\napi_key_env = "OPENAI_API_KEY"\n\n${PRICING}${extra}`,
  );
}

describe("budgets end to end", () => {
  let openai: FakeOpenAI;
  let home: string;
  let port: number;
  let daemon: TestDaemon;

  const spawn = (name: string, extra: object = {}) =>
    daemon.request("POST", "/api/v1/fighters", {
      manifest: { name, description: name, system_prompt: `You are ${name}.`, ...extra },
    });
  const send = (fighter: string, message: string) =>
    daemon.request<FighterMessageResult & ErrorBody>("POST", `/api/v1/fighters/${fighter}/message`, {
      message,
    });
  const budgets = async () =>
    (await daemon.request<{ budgets: BudgetStatus[] }>("GET", "/api/v1/budgets")).body.budgets;
  const budget = async (name: string) => (await budgets()).find((b) => b.budget === name);

  beforeAll(async () => {
    openai = await startFakeOpenAI();
    home = tempHome();
    port = await freePort();
    writeConfigFile(
      home,
      port,
      openai.url,
      `\n[budgets]\ntime_zone = "Europe/Lisbon"\nwarn_at_percent = 50\n`,
    );
    daemon = await startDaemon(home, port);
    expect((await spawn("ada", { budget: { daily: 0.01 } })).status).toBe(201);
  });

  afterAll(async () => {
    await daemon?.stop();
    await openai?.close();
    removeHome(home);
  });

  it("stops a fighter with a $0.01 daily budget with 402 at the call its spend reaches it", async () => {
    openai.reset();
    openai.enqueue(...Array.from({ length: 5 }, () => ({ text: "ok", usage: CALL })));
    // Calls 1–4 start with 0, 3,000, 6,000 and 9,000 of 10,000 micro-dollars spent: under the limit.
    for (let n = 1; n <= 4; n++) {
      const reply = await send("ada", `message ${n}`);
      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    }
    const refused = await send("ada", "message 5");
    expect(refused.status).toBe(402);
    expect(refused.body.error).toMatchObject({
      code: "BUDGET_EXCEEDED",
      budget: "fighter:ada:daily",
      limit: 0.01,
      spent: (4 * CALL_MICROS) / 1_000_000,
      resets_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:00:00\.000Z$/),
    });
    expect(refused.body.error.message).toMatch(/fighter:ada:daily is used up/);
    // The fifth call was never sent.
    expect(openai.calls()).toHaveLength(4);
    // The turn is recorded failed with that code.
    const bouts = await daemon.request<{ bouts: { id: string }[] }>("GET", "/api/v1/fighters/ada/bouts");
    const turns = await daemon.request<{ turns: { status: string; error?: { code: string } }[] }>(
      "GET",
      `/api/v1/bouts/${bouts.body.bouts[0]?.id}/turns`,
    );
    expect(turns.body.turns.at(-1)).toMatchObject({ status: "failed", error: { code: "BUDGET_EXCEEDED" } });
  });

  it("shows the budget in GET /api/v1/budgets and spar budgets, and the CLI prints the refusal", async () => {
    const row = await budget("fighter:ada:daily");
    expect(row).toEqual({
      budget: "fighter:ada:daily",
      scope: "fighter",
      name: "ada",
      period: "daily",
      unit: "money",
      limit: 0.01,
      spent: 0.012,
      reserved: 0,
      currency: "USD",
      resets_at: expect.any(String),
      on_exceed: "stop",
    });
    const json = await daemon.cli(["budgets", "--json"]);
    expect(JSON.parse(json.stdout).budgets).toContainEqual(row);
    const table = await daemon.cli(["budgets"]);
    expect(table.stdout).toMatch(/fighter:ada:daily\s+\$0\.01\s+\$0\.012\s+\$0\.00\s+120%/);
    const chat = await daemon.cli(["chat", "--fighter", "ada", "one more"]);
    expect(chat.code).toBe(1);
    expect(chat.stderr).toMatch(
      /budget fighter:ada:daily is used up: 0\.012 USD of 0\.01 USD spent.*\(BUDGET_EXCEEDED\)/,
    );
  });

  it("keeps what was spent across kill -9", async () => {
    const exited = new Promise((done) => daemon.process.once("exit", done));
    daemon.process.kill("SIGKILL");
    await exited;
    daemon = await startDaemon(home, port);
    expect(await budget("fighter:ada:daily")).toMatchObject({ spent: 0.012, reserved: 0 });
    openai.reset();
    expect((await send("ada", "after the restart")).status).toBe(402);
    expect(openai.calls()).toHaveLength(0);
  });

  it("stops an evil model that loops tool calls forever at its budget", async () => {
    openai.reset();
    expect((await spawn("evil", { budget: { daily_tokens: 1000 }, max_iterations: 100 })).status).toBe(201);
    openai.enqueue(
      ...Array.from({ length: 30 }, (_, i) => ({
        tool_calls: [{ name: "memory_recall", arguments: { query: `again ${i}` } }],
        usage: { prompt_tokens: 150, completion_tokens: 50 },
      })),
    );
    const reply = await send("evil", "loop");
    expect(reply.status).toBe(402);
    expect(reply.body.error).toMatchObject({ budget: "fighter:evil:daily_tokens", limit: 1000, spent: 1000 });
    // Five calls of 200 tokens reach 1,000: the sixth is refused before it is sent.
    expect(openai.calls()).toHaveLength(5);
  });

  it("asks with on_exceed = ask: approved, the turn goes on; denied, it stops", async () => {
    openai.reset();
    expect((await spawn("asker", { budget: { daily_tokens: 100, on_exceed: "ask" } })).status).toBe(201);
    openai.enqueue(
      ...Array.from({ length: 3 }, () => ({
        text: "fine",
        usage: { prompt_tokens: 90, completion_tokens: 10 },
      })),
    );
    expect((await send("asker", "first")).status).toBe(200);
    const pending = async () => {
      for (let i = 0; i < 100; i++) {
        const list = await daemon.request<{ approvals: { id: string; move: string; fighter: string }[] }>(
          "GET",
          "/api/v1/approvals?status=pending",
        );
        const found = list.body.approvals.find((r) => r.fighter === "asker");
        if (found) return found;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error("no pending request");
    };
    const second = send("asker", "second");
    const asked = await pending();
    expect(asked.move).toBe("model_call");
    expect((await daemon.cli(["approvals", "approve", asked.id])).code).toBe(0);
    expect((await second).status).toBe(200);
    const third = send("asker", "third");
    const again = await pending();
    expect((await daemon.cli(["approvals", "deny", again.id, "--reason", "enough"])).code).toBe(0);
    const denied = await third;
    expect(denied.status).toBe(402);
    expect(denied.body.error).toMatchObject({
      code: "BUDGET_EXCEEDED",
      budget: "fighter:asker:daily_tokens",
    });
    expect(openai.calls()).toHaveLength(2);
  });

  it("stops a troop task at the step its troop's budget refuses, and shows the troop's budget", async () => {
    openai.reset();
    for (const name of ["p1", "p2", "p3", "p4"]) expect((await spawn(name)).status).toBe(201);
    // A troop's budget is refused unless its limits are numbers in bounds.
    const bad = await daemon.request<ErrorBody>("POST", "/api/v1/troops", {
      name: "spendthrift",
      leader: "p1",
      members: ["p1", "p2"],
      strategy: "pipeline",
      budget: { daily_tokens: -1 },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe("VALIDATION_FAILED");
    const created = await daemon.request<{ budget?: object }>("POST", "/api/v1/troops", {
      name: "frugal",
      leader: "p1",
      members: ["p1", "p2", "p3", "p4"],
      strategy: "pipeline",
      budget: { daily_tokens: 1000 },
    });
    expect(created.status).toBe(201);
    expect(created.body.budget).toEqual({ daily_tokens: 1000 });
    // Each step is one call of 400 tokens: steps 1–3 start at 0, 400 and 800 of 1,000; the 4th is refused.
    openai.enqueue(
      ...Array.from({ length: 4 }, (_, i) => ({
        text: `step ${i + 1} done`,
        usage: { prompt_tokens: 300, completion_tokens: 100 },
      })),
    );
    const task = await daemon.request<{
      status: string;
      error: { code: string; message: string } | null;
      steps: { error: { code: string; message: string } | null }[];
    }>("POST", "/api/v1/troops/frugal/tasks", { task: "count to four" });
    expect(task.status).toBe(200);
    expect(task.body.status).toBe("failed");
    expect(task.body.steps.map((s) => s.error?.code ?? null)).toEqual([null, null, null, "BUDGET_EXCEEDED"]);
    expect(task.body.steps[3]?.error?.message).toMatch(
      /^the budget troop:frugal:daily_tokens is used up: 1200 tokens of 1000 tokens spent/,
    );
    expect(openai.calls()).toHaveLength(3);
    expect(await budget("troop:frugal:daily_tokens")).toMatchObject({
      scope: "troop",
      name: "frugal",
      unit: "tokens",
      limit: 1000,
      spent: 1200,
      reserved: 0,
    });
    // The next task of the troop is refused at its first step; another troop's members are not.
    const next = await daemon.request<{ status: string; steps: { error: { code: string } | null }[] }>(
      "POST",
      "/api/v1/troops/frugal/tasks",
      { task: "again" },
    );
    expect(next.body.steps.map((s) => s.error?.code ?? null)).toEqual(["BUDGET_EXCEEDED"]);
    expect(openai.calls()).toHaveLength(3);
    // With on_exceed = "ask" (an edit), a step has no one to ask: refused at once, nothing left pending.
    const edited = await daemon.request<{ budget?: object }>("PATCH", "/api/v1/troops/frugal", {
      budget: { daily_tokens: 1000, on_exceed: "ask" },
    });
    expect(edited.body.budget).toEqual({ daily_tokens: 1000, on_exceed: "ask" });
    const asked = await daemon.request<{ steps: { error: { code: string; message: string } | null }[] }>(
      "POST",
      "/api/v1/troops/frugal/tasks",
      { task: "once more" },
    );
    expect(asked.body.steps[0]?.error).toMatchObject({
      code: "BUDGET_EXCEEDED",
      message: expect.stringContaining("(the overrun was not approved)"),
    });
    const pending = await daemon.request<{ approvals: unknown[] }>("GET", "/api/v1/approvals?status=pending");
    expect(pending.body.approvals).toEqual([]);
    expect(openai.calls()).toHaveLength(3);
  });
});

describe("budgets under 50 concurrent turns", () => {
  let openai: FakeOpenAI;
  let home: string;
  let daemon: TestDaemon;
  const LIMIT = 2000;
  const MAX_TOKENS = 100;

  beforeAll(async () => {
    openai = await startFakeOpenAI();
    home = tempHome();
    const port = await freePort();
    writeConfigFile(home, port, openai.url, `\n[budgets.global]\ndaily_tokens = ${LIMIT}\n`);
    daemon = await startDaemon(home, port);
    for (let i = 0; i < 50; i++) {
      const spawned = await daemon.request("POST", "/api/v1/fighters", {
        manifest: {
          name: `f${i}`,
          description: "one of fifty",
          system_prompt: "Answer.",
          model: { provider: "openai", model: "house-model", base_url: openai.url, max_tokens: MAX_TOKENS },
        },
      });
      expect(spawned.status).toBe(201);
    }
  }, 60_000);

  afterAll(async () => {
    await daemon?.stop();
    await openai?.close();
    removeHome(home);
  });

  it("passes a budget by at most one call's reserved worst case", async () => {
    // Each call reports 100 tokens: no more than its worst case (its prompt's estimate + max_tokens).
    openai.enqueue(
      ...Array.from({ length: 50 }, () => ({
        text: "ok",
        usage: { prompt_tokens: 60, completion_tokens: 40 },
        delay_ms: 200,
      })),
    );
    const replies = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        daemon.request<ErrorBody>("POST", `/api/v1/fighters/f${i}/message`, { message: "go" }),
      ),
    );
    const ok = replies.filter((r) => r.status === 200).length;
    const refused = replies.filter((r) => r.status === 402);
    expect(ok + refused.length).toBe(50);
    expect(refused.length).toBeGreaterThan(0);
    expect(refused[0]?.body.error.budget).toBe("global:daily_tokens");
    // The worst case each call reserved: its prompt's estimate (system, message, tools) + max_tokens.
    const sent = openai.requests.map((r) => r.body as { messages: { content: string }[]; tools?: unknown[] });
    const worst = Math.max(
      ...sent.map(
        (b) =>
          MAX_TOKENS +
          b.messages.reduce((n, m) => n + 4 + Math.ceil(String(m.content).length / 4), 0) +
          (b.tools?.length ? Math.ceil(JSON.stringify(b.tools).length / 4) + 200 : 0),
      ),
    );
    const row = (
      await daemon.request<{ budgets: BudgetStatus[] }>("GET", "/api/v1/budgets")
    ).body.budgets.find((b) => b.budget === "global:daily_tokens");
    expect(row).toMatchObject({ spent: ok * 100, reserved: 0, limit: LIMIT });
    expect(ok * 100).toBeLessThanOrEqual(LIMIT + worst);
    // Without reservations all fifty would have passed: 5,000 tokens.
    expect(ok).toBeLessThan(50);
  });
});
