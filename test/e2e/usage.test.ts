/**
 * Where the tokens go, end to end (issue 31 item 4): the real daemon, fighters on fake OpenAI and
 * Anthropic servers that report usage and prompt-cache tokens as the real APIs do, a scripted
 * conversation, then GET /api/v1/usage and `spar usage` (table, --json, --csv, --by model): their
 * figures are the fakes' reported usage at the shipped prices, one call per request the fakes logged.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { UsageReport } from "../../sdk/services.js";
import { type FakeAnthropic, startFakeAnthropic } from "../fakes/anthropic-server.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import { freePort, removeHome, startDaemon, type TestDaemon, tempHome } from "../helpers/daemon.js";
import { GPT_4O_MINI, micros, SONNET_4_5 } from "../helpers/prices.js";

/** RFC 4180 as a reader takes it: quoted fields, doubled quotes, CRLF line ends. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") {
      row.push(field);
      field = "";
    } else if (c === "\r" && text[i + 1] === "\n") {
      row.push(field);
      rows.push(row);
      row = [];
      field = "";
      i++;
    } else field += c;
  }
  expect(field).toBe("");
  return rows;
}

describe("spar usage and GET /api/v1/usage end to end", () => {
  let openai: FakeOpenAI;
  let anthropic: FakeAnthropic;
  let home: string;
  let daemon: TestDaemon;
  // Days in UTC, so the test knows today's key.
  const today = () => new Date().toISOString().slice(0, 10);

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
  const mysteryCall = { prompt_tokens: 70, completion_tokens: 7 };

  beforeAll(async () => {
    [openai, anthropic] = await Promise.all([startFakeOpenAI(), startFakeAnthropic()]);
    home = tempHome();
    const port = await freePort();
    writeFileSync(
      join(home, "config.toml"),
      `api_listen = "127.0.0.1:${port}"\n\n[default_model]\nprovider = "openai"\nmodel = "gpt-4o-mini"\n` +
        `base_url = "${openai.url}"\napi_key_env = "OPENAI_API_KEY"\n\n` +
        `[[providers.endpoints]]\nprovider = "openai"\nbase_url = "${openai.url}"\n\n` +
        `[[providers.endpoints]]\nprovider = "anthropic"\nbase_url = "${anthropic.url}"\n`,
    );
    daemon = await startDaemon(home, port, { ANTHROPIC_API_KEY: "sk-ant-e2e", TZ: "UTC" });
    for (const [name, model] of [
      ["mini", { provider: "openai", model: "gpt-4o-mini", base_url: openai.url }],
      ["sonnet", { provider: "anthropic", model: "claude-sonnet-4-5", base_url: anthropic.url }],
      ["mystery", { provider: "openai", model: "gpt-mystery", base_url: openai.url }],
    ] as const) {
      const spawned = await daemon.request("POST", "/api/v1/fighters", {
        manifest: { name, description: name, system_prompt: `You are ${name}.`, model },
      });
      expect(spawned.status).toBe(201);
    }
    openai.reset();
    anthropic.reset();
    // The scripted conversation: a tool round trip on gpt-4o-mini, one cached Anthropic answer, one unpriced call.
    openai.enqueue(
      { tool_calls: [{ name: "memory_store", arguments: { key: "k", value: "v" } }], usage: miniCalls[0] },
      { text: "stored", usage: miniCalls[1] },
    );
    anthropic.enqueue({ text: "cached answer", usage: sonnetCall });
    for (const [fighter, message] of [
      ["mini", "remember k"],
      ["sonnet", "a question with a long stable prefix"],
    ]) {
      const reply = await daemon.request("POST", `/api/v1/fighters/${fighter}/message`, { message });
      expect(reply.status).toBe(200);
    }
    openai.enqueue({ text: "mystery", usage: mysteryCall });
    expect(
      (await daemon.request("POST", "/api/v1/fighters/mystery/message", { message: "hello" })).status,
    ).toBe(200);
  });

  afterAll(async () => {
    await daemon?.stop();
    await Promise.all([openai?.close(), anthropic?.close()]);
    removeHome(home);
  });

  const get = (query: string) => daemon.request<UsageReport>("GET", `/api/v1/usage${query}`);
  const completions = () =>
    openai.requests.filter((r) => r.method === "POST").length +
    anthropic.requests.filter((r) => r.method === "POST").length;

  it("sums per model what the fakes reported, at the shipped prices; an unknown model is unpriced", async () => {
    const mini = miniCalls.map((u) => micros(GPT_4O_MINI, u));
    const sonnet = micros(SONNET_4_5, sonnetCall);
    expect([...mini, sonnet]).toEqual([127, 121, 9525]);
    const { status, body } = await get("?by=model");
    expect(status).toBe(200);
    const figures = { currency: "USD" };
    expect(body.usage).toEqual([
      {
        key: "anthropic/claude-sonnet-4-5",
        requests: 1,
        input_tokens: 5000,
        output_tokens: 100,
        cached_tokens: 3000,
        cache_write_tokens: 1500,
        cost: 0.009525,
        ...figures,
        unpriced_requests: 0,
      },
      {
        key: "openai/gpt-4o-mini",
        requests: 2,
        input_tokens: 2500,
        output_tokens: 61,
        cached_tokens: 2176,
        cache_write_tokens: 0,
        cost: 0.000248,
        ...figures,
        unpriced_requests: 0,
      },
      {
        key: "openai/gpt-mystery",
        requests: 1,
        input_tokens: 70,
        output_tokens: 7,
        cached_tokens: 0,
        cache_write_tokens: 0,
        cost: null,
        ...figures,
        unpriced_requests: 1,
      },
    ]);
    // One ledger row per request the fakes logged.
    expect(body.total).toEqual({
      requests: completions(),
      input_tokens: 7570,
      output_tokens: 168,
      cached_tokens: 5176,
      cache_write_tokens: 1500,
      cost: 0.009773,
      currency: "USD",
      unpriced_requests: 1,
    });
    expect(body.total.requests).toBe(4);
  });

  it("groups by day (today), fighter, origin and provider, and filters by fighter and model", async () => {
    expect((await get("?tz=UTC")).body.usage.map((u) => [u.key, u.requests])).toEqual([[today(), 4]]);
    expect((await get("?by=fighter")).body.usage.map((u) => [u.key, u.requests, u.cost])).toEqual([
      ["mini", 2, 0.000248],
      ["mystery", 1, null],
      ["sonnet", 1, 0.009525],
    ]);
    expect((await get("?by=origin")).body.usage.map((u) => [u.key, u.requests])).toEqual([["user", 4]]);
    expect((await get("?by=provider")).body.usage.map((u) => [u.key, u.requests])).toEqual([
      ["anthropic", 1],
      ["openai", 3],
    ]);
    expect((await get("?fighter=sonnet&by=model")).body.total).toMatchObject({ requests: 1, cost: 0.009525 });
    expect((await get("?model=gpt-4o-mini")).body.total).toMatchObject({ requests: 2, cost: 0.000248 });
    expect((await get(`?since=${today()}&until=${today()}`)).body.total.requests).toBe(4);
    expect((await get("?since=2001-01-01&until=2001-01-31")).body).toMatchObject({
      usage: [],
      total: { requests: 0, cost: null },
    });
  });

  it("refuses bad filters with VALIDATION_FAILED naming the parameter, an unknown fighter with 404", async () => {
    for (const [query, name] of [
      ["?by=week", "by"],
      ["?since=yesterday", "since"],
      ["?until=2026-13-01", "until"],
      ["?tz=Mars%2FOlympus", "tz"],
      ["?since=2026-03-10&until=2026-03-09", "since"],
    ]) {
      const refused = await daemon.request<{ error: { code: string; message: string } }>(
        "GET",
        `/api/v1/usage${query}`,
      );
      expect(refused.status, query).toBe(400);
      expect(refused.body.error.code).toBe("VALIDATION_FAILED");
      expect(refused.body.error.message).toContain(name);
    }
    const unknown = await daemon.request<{ error: { code: string } }>("GET", "/api/v1/usage?frob=1");
    expect(unknown.status).toBe(400);
    const nobody = await daemon.request<{ error: { code: string } }>("GET", "/api/v1/usage?fighter=nobody");
    expect(nobody.status).toBe(404);
    expect(nobody.body.error.code).toBe("FIGHTER_NOT_FOUND");
  });

  it("spar usage --json prints the API's body; --by model a table with the cost, the total last", async () => {
    const json = await daemon.cli(["usage", "--json", "--tz", "UTC"]);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual((await get("?tz=UTC")).body);

    const byModel = await daemon.cli(["usage", "--by", "model"]);
    expect(byModel.code).toBe(0);
    const lines = byModel.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^MODEL\s+CALLS\s+INPUT\s+CACHED\s+CACHE WRITE\s+OUTPUT\s+COST$/);
    expect(lines[1]).toMatch(/^anthropic\/claude-sonnet-4-5\s+1\s+5000\s+3000\s+1500\s+100\s+\$0\.009525$/);
    expect(lines[2]).toMatch(/^openai\/gpt-4o-mini\s+2\s+2500\s+2176\s+0\s+61\s+\$0\.000248$/);
    expect(lines[3]).toMatch(/^openai\/gpt-mystery\s+1\s+70\s+0\s+0\s+7\s+unpriced$/);
    expect(lines[4]).toMatch(/^TOTAL\s+4\s+7570\s+5176\s+1500\s+168\s+\$0\.009773 \(\+1 of 4 unpriced\)$/);
    expect(lines).toHaveLength(5);

    const day = await daemon.cli(["usage", "--tz", "UTC"]);
    expect(day.stdout).toMatch(new RegExp(`^DAY\\s+CALLS[\\s\\S]*\\n${today()}\\s+4\\s+7570`));
  });

  it("spar usage --csv prints RFC 4180 CSV with a header, the total last", async () => {
    const csv = await daemon.cli(["usage", "--csv", "--by", "model"]);
    expect(csv.code).toBe(0);
    expect(csv.stdout).toContain("\r\n");
    const rows = parseCsv(csv.stdout);
    expect(rows[0]).toEqual([
      "key",
      "requests",
      "input_tokens",
      "output_tokens",
      "cached_tokens",
      "cache_write_tokens",
      "cost",
      "currency",
      "unpriced_requests",
    ]);
    expect(rows.slice(1)).toEqual([
      ["anthropic/claude-sonnet-4-5", "1", "5000", "100", "3000", "1500", "0.009525", "USD", "0"],
      ["openai/gpt-4o-mini", "2", "2500", "61", "2176", "0", "0.000248", "USD", "0"],
      ["openai/gpt-mystery", "1", "70", "7", "0", "0", "", "USD", "1"],
      ["total", "4", "7570", "168", "5176", "1500", "0.009773", "USD", "1"],
    ]);
  });

  it("names the option the user typed when the daemon refuses its value", async () => {
    const bad = await daemon.cli(["usage", "--since", "yesterday"]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/--since must be/);
    expect(bad.stderr).toContain("VALIDATION_FAILED");
    const by = await daemon.cli(["usage", "--by", "week"]);
    expect(by.code).toBe(1);
    expect(by.stderr).toMatch(/--by/);
  });
});
