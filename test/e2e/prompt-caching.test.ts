/**
 * Prompt caching and `spar context`, end to end (issue 31 items 3 and 4): the real daemon, a fighter
 * on each provider's fake, which caches prompts as its real API does and reports what it read and
 * wrote. Two consecutive turns' requests share their prefix byte for byte; Anthropic's carry
 * `cache_control` on it, and the second call's cached tokens land in the ledger at the cached price;
 * `spar context` shows the next turn's prompt part by part, and its parts add up to what the fake
 * then receives.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FighterMessageResult, PromptContext } from "../../sdk/index.js";
import type { FighterUsage } from "../../sdk/services.js";
import { estimateTokens } from "../../sdk/tokens.js";
import { CONTEXT_HEADING } from "../../sdk/turn-context.js";
import { type FakeAnthropic, startFakeAnthropic } from "../fakes/anthropic-server.js";
import { type FakeGemini, startFakeGemini } from "../fakes/gemini-server.js";
import { type FakeOllama, startFakeOllama } from "../fakes/ollama-server.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import { freePort, removeHome, startDaemon, type TestDaemon, tempHome } from "../helpers/daemon.js";
import { SONNET_4_5 } from "../helpers/prices.js";

/** Long enough for every fake's cache (1,024 tokens at least): about 1,700 tokens. */
const LONG_PROMPT = `You are a patient tutor. ${"Answer in plain words, one step at a time, and check each step. ".repeat(100)}`;

/** A text as a regular expression that matches it literally. */
const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** A JSON value without its `cache_control` markers, a string content as the one text block it is. */
function unmarked(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(unmarked);
  if (typeof value !== "object" || value === null) return value;
  const entries = Object.entries(value).filter(([k]) => k !== "cache_control");
  const out = Object.fromEntries(entries.map(([k, v]) => [k, unmarked(v)]));
  if (typeof out.content === "string" && (out.role === "user" || out.role === "assistant"))
    out.content = [{ type: "text", text: out.content }];
  return out;
}

/**
 * A request as its parts: tools, the system prompt's text, the conversation (each message JSON, in
 * wire order), and where Spar's per-turn context is (the index of the message it is, or heads; -1
 * for none) and its text.
 */
interface Wire {
  tools: string;
  system: string;
  messages: string[];
  contextAt: number;
  context: string;
}

const headed = (text: unknown): text is string =>
  typeof text === "string" && text.startsWith(CONTEXT_HEADING);

/** A request as a turn sent it, and the index of its last user message. */
type Turn = Wire & { lastUser: number };

/** Where the turn starts: at its context, or, without one, at its (last) user message. */
function turnStart(wire: Wire, lastUser: number): number {
  return wire.contextAt >= 0 ? wire.contextAt : lastUser;
}

describe("prompt caching end to end", () => {
  let anthropic: FakeAnthropic;
  let openai: FakeOpenAI;
  let gemini: FakeGemini;
  let ollama: FakeOllama;
  let home: string;
  let daemon: TestDaemon;

  beforeAll(async () => {
    [anthropic, openai, gemini, ollama] = await Promise.all([
      startFakeAnthropic(),
      startFakeOpenAI(),
      startFakeGemini(),
      startFakeOllama(),
    ]);
    home = tempHome();
    const port = await freePort();
    writeFileSync(
      join(home, "config.toml"),
      `api_listen = "127.0.0.1:${port}"\n\n[default_model]\nprovider = "openai"\nmodel = "gpt-4o-mini"\n` +
        `base_url = "${openai.url}"\napi_key_env = "OPENAI_API_KEY"\n\n[creed]\nreflect = false\n\n` +
        `[providers]\nallow_manifest_base_url = ["${ollama.url}"]\n\n` +
        // Caching off for one provider: `spar context` says so.
        `[providers.google]\nprompt_cache = false\n\n` +
        ["openai", "anthropic", "google"]
          .map(
            (p, i) =>
              `[[providers.endpoints]]\nprovider = "${p}"\nbase_url = "${[openai, anthropic, gemini][i]?.url}"\n\n`,
          )
          .join(""),
    );
    daemon = await startDaemon(home, port, { ANTHROPIC_API_KEY: "sk-ant-e2e", GEMINI_API_KEY: "gem-e2e" });
    for (const [name, model] of [
      ["on-anthropic", { provider: "anthropic", model: "claude-sonnet-4-5", base_url: anthropic.url }],
      ["on-openai", { provider: "openai", model: "gpt-4o-mini", base_url: openai.url }],
      ["on-google", { provider: "google", model: "gemini-2.5-flash", base_url: gemini.url }],
      ["on-ollama", { provider: "ollama", model: "llama3.2", base_url: ollama.url }],
    ] as const) {
      const spawned = await daemon.request("POST", "/api/v1/fighters", {
        manifest: { name, description: `A tutor on ${model.provider}`, system_prompt: LONG_PROMPT, model },
      });
      expect(spawned.status).toBe(201);
    }
  });

  afterAll(async () => {
    await daemon?.stop();
    await Promise.all([anthropic?.close(), openai?.close(), gemini?.close(), ollama?.close()]);
    removeHome(home);
  });

  const send = (fighter: string, message: string) =>
    daemon.request<FighterMessageResult>("POST", `/api/v1/fighters/${fighter}/message`, { message });
  const context = async (fighter: string, query = "") =>
    (await daemon.request<PromptContext>("GET", `/api/v1/fighters/${fighter}/context${query}`)).body;

  /** Each fake's requests, as tools, system text, messages and where the turn's context is. */
  const wires: Record<string, () => Turn[]> = {
    "on-anthropic": () =>
      anthropic.requests.map(({ body }) => {
        const messages = body?.messages ?? [];
        const at = messages.findIndex((m) => Array.isArray(m.content) && headed(m.content[0]?.text));
        const head = at >= 0 ? messages[at]?.content : undefined;
        return {
          tools: JSON.stringify(unmarked(body?.tools ?? [])),
          system: Array.isArray(body?.system)
            ? body.system.map((b) => b.text).join("")
            : (body?.system ?? ""),
          messages: messages.map((m) => JSON.stringify(unmarked(m))),
          contextAt: at,
          context: Array.isArray(head) ? (head[0]?.text ?? "") : "",
          lastUser: messages.findLastIndex((m) => m.role === "user"),
        };
      }),
    "on-openai": () =>
      openai.requests.map(({ body }) => {
        const messages = (body?.messages ?? []).slice(1);
        const at = messages.findIndex((m) => m.role === "system");
        return {
          tools: JSON.stringify(body?.tools ?? []),
          system: String(body?.messages[0]?.content ?? ""),
          messages: messages.map((m) => JSON.stringify(m)),
          contextAt: at,
          context: at >= 0 ? String(messages[at]?.content ?? "") : "",
          lastUser: messages.findLastIndex((m) => m.role === "user"),
        };
      }),
    "on-google": () =>
      gemini.requests.map(({ body }) => {
        const contents = body?.contents ?? [];
        const at = contents.findIndex((c) => c.role === "user" && headed(c.parts?.[0]?.text));
        return {
          tools: JSON.stringify(body?.tools ?? []),
          system: (body?.systemInstruction?.parts ?? []).map((p) => p.text ?? "").join(""),
          messages: contents.map((c) => JSON.stringify(c)),
          contextAt: at,
          context: at >= 0 ? (contents[at]?.parts?.[0]?.text ?? "") : "",
          lastUser: contents.findLastIndex((c) => c.role === "user"),
        };
      }),
    "on-ollama": () =>
      ollama.requests.map(({ body }) => {
        const messages = (body?.messages ?? []).slice(1);
        const at = messages.findIndex((m) => m.role === "system");
        return {
          tools: JSON.stringify(body?.tools ?? []),
          system: String(body?.messages[0]?.content ?? ""),
          messages: messages.map((m) => JSON.stringify(m)),
          contextAt: at,
          context: at >= 0 ? String(messages[at]?.content ?? "") : "",
          lastUser: messages.findLastIndex((m) => m.role === "user"),
        };
      }),
  };

  it.each(Object.keys(wires))(
    "%s: over three turns, each request repeats the one before byte for byte through its history",
    async (name) => {
      expect((await send(name, "What is a prime number?")).status).toBe(200);
      expect((await send(name, "And a composite one?")).status).toBe(200);
      expect((await send(name, "Is 1 either?")).status).toBe(200);
      const requests = (wires[name] as () => Turn[])().slice(-3);
      expect(requests).toHaveLength(3);
      const [, second, third] = requests as [Turn, Turn, Turn];
      // The system prompt is the stable part alone; the Creed's counters, which change every turn,
      // come after the history, just before the turn's message, headed as Spar's.
      expect(second.context).toMatch(
        new RegExp(`^${literal(CONTEXT_HEADING)}\\n## Creed of .+, lately\\nHistory: 1 conversation`),
      );
      expect(third.context).toMatch(/## Creed of .+, lately\nHistory: 2 conversation/);
      expect(second.contextAt).toBe(2);
      expect(third.contextAt).toBe(4);
      for (const [previous, next] of [requests.slice(0, 2), requests.slice(1, 3)] as [Turn, Turn][]) {
        expect(next.tools).toBe(previous.tools);
        expect(next.system).toBe(previous.system);
        // Everything the previous request sent before its turn's own messages, the next sends again.
        const history = turnStart(previous, previous.lastUser);
        expect(next.messages.slice(0, history)).toEqual(previous.messages.slice(0, history));
        expect(next.messages.length).toBeGreaterThan(previous.messages.length);
      }
      // The third turn's history holds the first turn's messages, all before its context.
      expect(turnStart(second, 0)).toBe(2);
      expect(third.messages.slice(0, 2)).toEqual(second.messages.slice(0, 2));
    },
  );

  it("Anthropic: cache_control on an identical prefix; the history read from the cache on turn 3, recorded and priced", async () => {
    const [first, second, third] = anthropic.requests.slice(-3);
    const stable = (r: typeof first) => (Array.isArray(r?.body?.system) ? r.body.system[0] : undefined);
    expect(stable(first)).toMatchObject({ type: "text", cache_control: { type: "ephemeral" } });
    expect(JSON.stringify(stable(second))).toBe(JSON.stringify(stable(first)));
    expect(stable(first)?.text?.startsWith(LONG_PROMPT)).toBe(true);
    // The fake wrote the prefix on the first call and read it on the second, as the API does.
    expect(first?.usage).toMatchObject({ cache_read_input_tokens: 0 });
    expect(first?.usage?.cache_creation_input_tokens).toBeGreaterThan(1024);
    expect(second?.usage?.cache_read_input_tokens).toBeGreaterThan(1024);
    // Turn 3 reads from the cache everything the second turn sent before its context: the tools,
    // the system prompt and the first turn's messages (in the fake's count, four characters a token).
    const secondMessages = second?.body?.messages ?? [];
    const secondStart = secondMessages.findIndex(
      (m) => Array.isArray(m.content) && headed(m.content[0]?.text),
    );
    expect(secondStart).toBe(2);
    const before = (third?.body?.messages ?? []).slice(0, secondStart);
    const text = [
      ...(third?.body?.tools ?? []).map((t) => JSON.stringify({ ...t, cache_control: undefined })),
      ...(Array.isArray(third?.body?.system) ? third.body.system.map((b) => b.text ?? "") : []),
      ...before.flatMap((m) =>
        typeof m.content === "string" ? [m.content] : m.content.map((b) => b.text ?? ""),
      ),
    ].join("");
    expect(third?.usage?.cache_read_input_tokens).toBe(Math.ceil(text.length / 4));
    expect(third?.usage?.cache_read_input_tokens).toBeGreaterThan(
      second?.usage?.cache_read_input_tokens ?? 0,
    );
    const reported = anthropic.requests.map((r) => r.usage ?? {});
    const sum = (key: string) => reported.reduce((n, u) => n + (u[key] ?? 0), 0);
    const micros = reported.reduce(
      (n, u) =>
        n +
        Math.round(
          (u.input_tokens ?? 0) * SONNET_4_5.input +
            (u.cache_read_input_tokens ?? 0) * SONNET_4_5.cached +
            (u.cache_creation_input_tokens ?? 0) * SONNET_4_5.write +
            (u.output_tokens ?? 0) * SONNET_4_5.output,
        ),
      0,
    );
    const spent = (await daemon.request<FighterUsage>("GET", "/api/v1/fighters/on-anthropic/usage")).body;
    expect(spent.usage).toEqual([
      expect.objectContaining({
        model: "claude-sonnet-4-5",
        requests: 3,
        input_tokens:
          sum("input_tokens") + sum("cache_read_input_tokens") + sum("cache_creation_input_tokens"),
        cached_tokens: sum("cache_read_input_tokens"),
        cache_write_tokens: sum("cache_creation_input_tokens"),
        cost_micros: micros,
      }),
    ]);
  });

  it("OpenAI: one prompt_cache_key per fighter, never its id, and the cached prefix recorded", async () => {
    const fighter = (await daemon.request<{ id: string }>("GET", "/api/v1/fighters/on-openai")).body;
    const keys = openai.requests.map((r) => r.body?.prompt_cache_key);
    expect(new Set(keys).size).toBe(1);
    expect(keys[0]).toMatch(/^spar-/);
    expect(keys[0]).not.toContain(fighter.id);
    const spent = (await daemon.request<FighterUsage>("GET", "/api/v1/fighters/on-openai/usage")).body;
    expect(spent.usage[0]?.cached_tokens).toBeGreaterThanOrEqual(1024);
  });

  it("spar context: the next turn's parts, which add up to what the model then receives", async () => {
    const probe = "Is 91 prime?";
    const view = await context("on-anthropic", `?message=${encodeURIComponent(probe)}`);
    expect(view.bout_id).toBeTruthy();
    expect(view.message).toBe(probe);
    expect(view.parts.map((p) => p.part)).toEqual(
      expect.arrayContaining([
        "system",
        "creed",
        "skills",
        "tools",
        "summary",
        "memory",
        "history",
        "message",
      ]),
    );
    const part = (name: string) => view.parts.filter((p) => p.part === name);
    expect(part("system")[0]).toMatchObject({
      source: "manifest",
      stable: true,
      tokens: estimateTokens(LONG_PROMPT),
    });
    expect(part("history")[0]).toMatchObject({ count: 6 });
    expect(view.input_tokens).toBe(view.parts.reduce((n, p) => n + p.tokens, 0));
    expect(view.cache).toEqual({
      enabled: true,
      stable_tokens: view.parts.filter((p) => p.stable).reduce((n, p) => n + p.tokens, 0),
    });
    expect(view.cost?.cached_micros).toBeLessThan(view.cost?.uncached_micros ?? 0);
    // A dry run: no model call, no counter moved (the Creed's history line is as it was).
    const calls = anthropic.requests.length;
    const again = await context("on-anthropic", `?message=${encodeURIComponent(probe)}`);
    expect(again).toEqual(view);
    expect(anthropic.requests.length).toBe(calls);

    // The parts are listed in the order they are sent: the varying ones after the history.
    const names = view.parts.map((p) => `${p.part}${p.stable ? "" : "~"}`);
    expect(names.indexOf("history~")).toBeLessThan(names.indexOf("creed~"));
    expect(names.indexOf("creed~")).toBeLessThan(names.indexOf("message~"));

    // The real turn: its system prompt is what the stable parts counted, its context what the
    // varying ones added (and its heading), and its whole prompt is what all the parts counted,
    // within the estimate (framing and wire shapes aside).
    expect((await send("on-anthropic", probe)).status).toBe(200);
    const sent = anthropic.requests.at(-1);
    const system = Array.isArray(sent?.body?.system) ? sent.body.system.map((b) => b.text).join("") : "";
    const systemParts = view.parts.filter((p) => p.stable && p.part !== "tools");
    expect(systemParts.map((p) => p.part)).toEqual(["system", "creed"]);
    const counted = systemParts.reduce((n, p) => n + p.tokens, 0);
    expect(Math.abs(counted - estimateTokens(system))).toBeLessThanOrEqual(systemParts.length);
    const head = sent?.body?.messages.at(-1)?.content;
    const sentContext = Array.isArray(head) && headed(head[0]?.text) ? head[0].text : "";
    const contextParts = view.parts.filter(
      (p) => !p.stable && ["creed", "skills", "mcp", "summary"].includes(p.part),
    );
    expect(contextParts.find((p) => p.part === "creed")?.tokens).toBeGreaterThan(0);
    const varying = contextParts.reduce((n, p) => n + p.tokens, 0);
    expect(
      Math.abs(varying + estimateTokens(`${CONTEXT_HEADING}\n`) - estimateTokens(sentContext)),
    ).toBeLessThanOrEqual(contextParts.length + 1);
    const received = sent?.usage ?? {};
    const total =
      (received.input_tokens ?? 0) +
      (received.cache_read_input_tokens ?? 0) +
      (received.cache_creation_input_tokens ?? 0);
    expect(Math.abs(view.input_tokens - total) / total).toBeLessThan(0.05);
  });

  it("spar context from the CLI: the same figures, and caching off where config.toml turns it off", async () => {
    const cli = await daemon.cli(["context", "--fighter", "on-google", "--json"]);
    expect(cli.code, cli.stderr).toBe(0);
    const view = JSON.parse(cli.stdout) as PromptContext;
    expect(view).toEqual(await context("on-google"));
    expect(view.cache.enabled).toBe(false);
    expect(view.message).toBe("");
    const text = await daemon.cli(["context", "--fighter", "on-anthropic"]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^PART +FROM +PREFIX +TOKENS~/m);
    expect(text.stdout).toMatch(/^creed +identity-creed +stable +\d+/m);
    expect(text.stdout).toMatch(/estimate/);
    expect(text.stdout).toMatch(/Prompt cache: on; the stable prefix is ~\d+ tokens/);
    expect(text.stdout).toMatch(/Input cost: \$[\d.]+, or \$[\d.]+ with the stable prefix cached/);
    const missing = await daemon.request<{ error: { code: string } }>(
      "GET",
      "/api/v1/fighters/on-anthropic/context?bout=b_nope",
    );
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe("BOUT_NOT_FOUND");
  });
});
