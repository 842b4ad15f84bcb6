/**
 * A price for every call, end to end (issue 31 part 1): the real daemon, fighters on fake OpenAI and
 * Anthropic servers that report usage and prompt-cache tokens as the real APIs do, and a scripted
 * conversation. Every model call lands in the usage ledger with its fighter, bout, turn, origin,
 * tokens and cost (shipped prices, a `[[pricing]]` override, and an unpriced model), and
 * GET /api/v1/fighters/:id/usage and `spar fighter usage` show it.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FighterMessageResult } from "../../sdk/index.js";
import type { FighterUsage } from "../../sdk/services.js";
import { type FakeAnthropic, startFakeAnthropic } from "../fakes/anthropic-server.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import { freePort, removeHome, startDaemon, type TestDaemon, tempHome } from "../helpers/daemon.js";
import { queryRows } from "../helpers/db.js";
import { GPT_4O_MINI, micros, SONNET_4_5 } from "../helpers/prices.js";

/** A recorded request's system prompt (the first message, as the OpenAI wire carries it). */
function systemOf(request: FakeOpenAI["requests"][number]): string {
  return String(request.body?.messages[0]?.content ?? "");
}

// The override in this test's config.toml (the shipped prices: test/helpers/prices.ts).
const OVERRIDE = { input: 1.5, output: 2, cached: 1.5, write: 1.5 };

describe("pricing end to end", () => {
  let openai: FakeOpenAI;
  let anthropic: FakeAnthropic;
  let home: string;
  let daemon: TestDaemon;

  beforeAll(async () => {
    [openai, anthropic] = await Promise.all([startFakeOpenAI(), startFakeAnthropic()]);
    home = tempHome();
    const port = await freePort();
    writeFileSync(
      join(home, "config.toml"),
      `api_listen = "127.0.0.1:${port}"\n\n[default_model]\nprovider = "openai"\nmodel = "gpt-4o-mini"\n` +
        `base_url = "${openai.url}"\napi_key_env = "OPENAI_API_KEY"\n\n` +
        `[[providers.endpoints]]\nprovider = "openai"\nbase_url = "${openai.url}"\n\n` +
        `[[providers.endpoints]]\nprovider = "anthropic"\nbase_url = "${anthropic.url}"\n\n` +
        `[[pricing]]\nprovider = "openai"\nmodel = "house-model"\ninput_per_mtok = ${OVERRIDE.input}\noutput_per_mtok = ${OVERRIDE.output}\n`,
    );
    daemon = await startDaemon(home, port, { ANTHROPIC_API_KEY: "sk-ant-e2e" });
    const spawn = (name: string, model: object) =>
      daemon.request("POST", "/api/v1/fighters", {
        manifest: { name, description: name, system_prompt: `You are ${name}.`, model },
      });
    for (const [name, model] of [
      ["mini", { provider: "openai", model: "gpt-4o-mini", base_url: openai.url }],
      ["sonnet", { provider: "anthropic", model: "claude-sonnet-4-5", base_url: anthropic.url }],
      ["house", { provider: "openai", model: "house-model", base_url: openai.url }],
      ["mystery", { provider: "openai", model: "gpt-mystery", base_url: openai.url }],
    ] as const) {
      expect((await spawn(name, model)).status).toBe(201);
    }
  });

  afterAll(async () => {
    await daemon?.stop();
    await Promise.all([openai?.close(), anthropic?.close()]);
    removeHome(home);
  });

  const send = (fighter: string, message: string) =>
    daemon.request<FighterMessageResult>("POST", `/api/v1/fighters/${fighter}/message`, { message });
  const usageOf = async (fighter: string) =>
    (await daemon.request<FighterUsage>("GET", `/api/v1/fighters/${fighter}/usage`)).body;

  const miniCalls = [
    { prompt_tokens: 1200, completion_tokens: 40, cached_tokens: 1024 },
    { prompt_tokens: 1300, completion_tokens: 21, cached_tokens: 1152 },
  ];
  const sonnetCall = {
    prompt_tokens: 5000,
    completion_tokens: 100,
    cached_tokens: 3000,
    cache_write_tokens: 1500,
  };
  const houseCall = { prompt_tokens: 1000, completion_tokens: 500 };
  const mysteryCall = { prompt_tokens: 70, completion_tokens: 7 };

  it("records each call of a tool round trip with its cached tokens, priced from the shipped table", async () => {
    openai.enqueue(
      { tool_calls: [{ name: "memory_store", arguments: { key: "k", value: "v" } }], usage: miniCalls[0] },
      { text: "stored", usage: miniCalls[1] },
    );
    const reply = await send("mini", "remember k");
    expect(reply.status).toBe(200);
    expect(reply.body.iterations).toBe(2);
    expect(reply.body.usage).toEqual({ input_tokens: 2500, output_tokens: 61 });

    const expected = miniCalls.map((u) => micros(GPT_4O_MINI, u));
    expect(expected).toEqual([127, 121]);
    const { usage, cost } = await usageOf("mini");
    expect(usage).toEqual([
      {
        provider: "openai",
        model: "gpt-4o-mini",
        requests: 2,
        input_tokens: 2500,
        output_tokens: 61,
        cached_tokens: 2176,
        cache_write_tokens: 0,
        cost_micros: 248,
        unpriced_requests: 0,
      },
    ]);
    expect(cost).toEqual({ cost_micros: 248, currency: "USD", unpriced_requests: 0 });

    // One ledger row per call, each with the fighter, bout, turn and origin of the turn it belongs to.
    const rows = (await queryRows(
      home,
      `SELECT u.bout_id, u.turn_id, u.origin, u.input_tokens, u.cached_tokens, u.output_tokens,
              u.cost_micros, u.currency
       FROM usage u JOIN fighters f ON f.id = u.fighter_id WHERE f.name = 'mini' ORDER BY u.rowid`,
    )) as Record<string, unknown>[];
    expect(rows).toEqual(
      miniCalls.map((u, i) => ({
        bout_id: reply.body.bout_id,
        turn_id: reply.body.turn_id,
        origin: "user",
        input_tokens: u.prompt_tokens,
        cached_tokens: u.cached_tokens,
        output_tokens: u.completion_tokens,
        cost_micros: expected[i],
        currency: "USD",
      })),
    );
  });

  it("counts Anthropic's cache reads and writes within the input and prices each at its rate", async () => {
    anthropic.enqueue({ text: "cached answer", usage: sonnetCall });
    const reply = await send("sonnet", "a question with a long stable prefix");
    expect(reply.status).toBe(200);
    expect(reply.body.usage).toEqual({ input_tokens: 5000, output_tokens: 100 });
    expect(micros(SONNET_4_5, sonnetCall)).toBe(9525);
    expect((await usageOf("sonnet")).usage).toEqual([
      {
        provider: "anthropic",
        model: "claude-sonnet-4-5",
        requests: 1,
        input_tokens: 5000,
        output_tokens: 100,
        cached_tokens: 3000,
        cache_write_tokens: 1500,
        cost_micros: 9525,
        unpriced_requests: 0,
      },
    ]);
  });

  it("prices a model by [[pricing]], and records an unknown one as unpriced", async () => {
    openai.enqueue({ text: "house", usage: houseCall }, { text: "mystery", usage: mysteryCall });
    expect((await send("house", "hello")).status).toBe(200);
    expect((await send("mystery", "hello")).status).toBe(200);
    expect(micros(OVERRIDE, houseCall)).toBe(2500);
    expect((await usageOf("house")).cost).toEqual({
      cost_micros: 2500,
      currency: "USD",
      unpriced_requests: 0,
    });
    const mystery = await usageOf("mystery");
    expect(mystery.usage).toEqual([
      expect.objectContaining({
        model: "gpt-mystery",
        input_tokens: 70,
        cost_micros: null,
        unpriced_requests: 1,
      }),
    ]);
    expect(mystery.cost).toEqual({ cost_micros: null, currency: "USD", unpriced_requests: 1 });
  });

  it("shows it with spar fighter usage: cost per model, and unpriced", async () => {
    const sonnet = await daemon.cli(["fighter", "usage", "sonnet"]);
    expect(sonnet.code).toBe(0);
    expect(sonnet.stdout).toMatch(
      /anthropic\/claude-sonnet-4-5\s+1\s+5000\s+3000\s+1500\s+100\s+\$0\.009525/,
    );
    expect(sonnet.stdout).toMatch(/TOTAL\s+1\s+5000\s+3000\s+1500\s+100\s+\$0\.009525/);
    const mystery = await daemon.cli(["fighter", "usage", "mystery"]);
    expect(mystery.stdout).toMatch(/openai\/gpt-mystery\s+1\s+70\s+0\s+0\s+7\s+unpriced/);
    const json = await daemon.cli(["fighter", "usage", "mini", "--json"]);
    expect(JSON.parse(json.stdout)).toMatchObject({ fighter: "mini", cost: { cost_micros: 248 } });
  });

  it("prices the calls that follow a turn: its reflection and its bout's summary, under the turn and its origin", async () => {
    // The other fighters are done: every request from here on is one of this fighter's calls.
    const from = openai.requests.length;
    const mine = () => openai.requests.slice(from);
    try {
      const usageFor = (system: string) =>
        system.startsWith("You summarize")
          ? { prompt_tokens: 700, completion_tokens: 60 }
          : system.startsWith("You keep the Creed")
            ? { prompt_tokens: 300, completion_tokens: 20 }
            : { prompt_tokens: 900, completion_tokens: 80 };
      openai.setDefault((body) => {
        const system = String(body.messages[0]?.content ?? "");
        const text = system.startsWith("You summarize")
          ? "SUMMARY: trams, funiculars and the 28."
          : system.startsWith("You keep the Creed")
            ? "- The user loves Lisbon's trams."
            : `Lisbon's trams date from 1873, horse-drawn at first, electric from 1901. ${"More history. ".repeat(20)}`;
        return { text, usage: usageFor(system) };
      });
      const spawned = await daemon.request("POST", "/api/v1/fighters", {
        manifest: {
          name: "reflective",
          description: "d",
          system_prompt: "You are reflective.",
          model: { provider: "openai", model: "gpt-4o-mini", base_url: openai.url, context_window: 400 },
        },
      });
      expect(spawned.status).toBe(201);
      const turns: string[] = [];
      for (let n = 1; n <= 12 && !mine().some((r) => usageFor(systemOf(r)).prompt_tokens === 700); n++) {
        const reply = await send(
          "reflective",
          `Turn ${n}: tell me one more thing about the history of Lisbon's trams.`,
        );
        expect(reply.status).toBe(200);
        turns.push(reply.body.turn_id);
      }
      // Aftercare runs after the reply, before the fighter's next turn: one more turn waits for it,
      // and its own aftercare (a reflection) may still be in flight: its row follows its request.
      turns.push((await send("reflective", "thanks")).body.turn_id);
      type Row = {
        turn_id: string;
        origin: string;
        input_tokens: number;
        output_tokens: number;
        cost_micros: number;
      };
      const ledger = async () =>
        (await queryRows(
          home,
          "SELECT turn_id, origin, input_tokens, output_tokens, cost_micros FROM usage WHERE fighter_id = (SELECT id FROM fighters WHERE name = 'reflective') ORDER BY rowid",
        )) as Row[];
      let rows = await ledger();
      for (let waited = 0; rows.length < mine().length && waited < 100; waited++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        rows = await ledger();
      }
      const sent = mine().map((r) => usageFor(systemOf(r)));
      expect(sent.filter((u) => u.prompt_tokens === 300).length).toBeGreaterThanOrEqual(1);
      expect(sent.filter((u) => u.prompt_tokens === 700).length).toBeGreaterThanOrEqual(1);
      // One row per request the provider got, with its reported tokens and their price.
      expect(rows.map((r) => [r.input_tokens, r.output_tokens]).sort()).toEqual(
        sent.map((u) => [u.prompt_tokens, u.completion_tokens]).sort(),
      );
      for (const row of rows) {
        expect(row.origin).toBe("user");
        expect(row.cost_micros).toBe(
          micros(GPT_4O_MINI, { prompt_tokens: row.input_tokens, completion_tokens: row.output_tokens }),
        );
      }
      // A reflection or a summary is booked under the turn it followed.
      const after = rows.filter((r) => r.input_tokens !== 900);
      expect(after.every((r) => turns.includes(r.turn_id))).toBe(true);
    } finally {
      openai.reset();
    }
  });

  it("refuses to start with a negative price, naming the key", async () => {
    const bad = tempHome();
    try {
      const port = await freePort();
      writeFileSync(
        join(bad, "config.toml"),
        `api_listen = "127.0.0.1:${port}"\n\n[[pricing]]\nprovider = "openai"\nmodel = "m"\ninput_per_mtok = -1\noutput_per_mtok = 1\n`,
      );
      await expect(startDaemon(bad, port)).rejects.toThrow(/"pricing\.0\.input_per_mtok" must be >= 0/);
    } finally {
      removeHome(bad);
    }
  });
});
