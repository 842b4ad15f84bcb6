import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FighterMessageResult } from "../../sdk/services.js";
import type { FighterRecord, ModelSettings, StoredMessage } from "../../sdk/types.js";
import { startFakeAnthropic } from "../fakes/anthropic-server.js";
import { startFakeGemini } from "../fakes/gemini-server.js";
import { startFakeOllama } from "../fakes/ollama-server.js";
import { startFakeOpenAI } from "../fakes/openai-server.js";
import type { FakeLlmServer } from "../fakes/scripted.js";
import {
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";

/**
 * Every provider id end to end: a fighter per provider in the real daemon, each answering and
 * running a tool round trip against a fake that speaks its wire protocol; routing; faults.
 */
describe("providers end to end", () => {
  const fakes: Record<string, FakeLlmServer> = {};
  let home: string;
  let daemon: TestDaemon;
  const keys = {
    OPENAI_API_KEY: "sk-openai-e2e",
    ANTHROPIC_API_KEY: "sk-ant-e2e",
    GEMINI_API_KEY: "gem-e2e",
    OPENROUTER_API_KEY: "sk-or-e2e",
  };
  const models: Record<string, (fake: FakeLlmServer) => ModelSettings> = {
    openai: (f) => ({ provider: "openai", model: "gpt-fake", base_url: f.url }),
    openai_compatible: (f) => ({ provider: "openai_compatible", model: "local-fake", base_url: f.url }),
    openrouter: (f) => ({ provider: "openrouter", model: "vendor/fake", base_url: f.url }),
    anthropic: (f) => ({ provider: "anthropic", model: "claude-fake", base_url: f.url }),
    google: (f) => ({ provider: "google", model: "gemini-fake", base_url: f.url }),
    ollama: (f) => ({ provider: "ollama", model: "llama-fake", base_url: f.url }),
  };
  const fakeOf = (provider: string) => fakes[provider] as FakeLlmServer;

  beforeAll(async () => {
    [
      fakes.openai,
      fakes.openai_compatible,
      fakes.openrouter,
      fakes.anthropic,
      fakes.google,
      fakes.ollama,
      fakes.default,
      fakes.mid,
      fakes.gone,
    ] = await Promise.all([
      startFakeOpenAI(),
      startFakeOpenAI(),
      startFakeOpenAI(),
      startFakeAnthropic(),
      startFakeGemini(),
      startFakeOllama(),
      startFakeOpenAI(),
      startFakeOpenAI(),
      startFakeOpenAI(),
    ]);
    // A server that is gone by the time a fighter calls it (its URL must be configured up front).
    await fakeOf("gone").close();
    home = tempHome();
    const port = await freePort();
    // The default fighter is routed: greetings to the local runner, heavy requests to Anthropic, and
    // the mid tier to a server whose key is missing (so that failure is visible at message time).
    writeConfig(
      home,
      port,
      fakeOf("default").url,
      `\n[model_routing]\nenabled = true\n\n[model_routing.cheap]\nprovider = "ollama"\nmodel = "llama-routed"\nbase_url = "${fakeOf("ollama").url}"\n\n` +
        `[model_routing.expensive]\nprovider = "anthropic"\nmodel = "claude-routed"\nbase_url = "${fakeOf("anthropic").url}"\n\n` +
        `[model_routing.mid]\nprovider = "openai_compatible"\nmodel = "mid"\nbase_url = "${fakeOf("mid").url}"\napi_key_env = "MID_TIER_KEY"\n\n` +
        // The endpoints fighters' manifests may name: keyed ones paired with their key, keyless ones listed.
        `[providers]\nallow_manifest_base_url = ["${fakeOf("openai_compatible").url}", "${fakeOf("gone").url}"]\n\n` +
        ["openai", "openrouter", "google"]
          .map((p) => `[[providers.endpoints]]\nprovider = "${p}"\nbase_url = "${fakeOf(p).url}"\n\n`)
          .join(""),
    );
    daemon = await startDaemon(home, port, keys);
  });

  afterAll(async () => {
    await daemon?.stop();
    await Promise.all(Object.entries(fakes).map(([name, f]) => (name === "gone" ? undefined : f.close())));
    removeHome(home);
  });

  const send = (fighter: string, message: string) =>
    daemon.request<FighterMessageResult & { error?: { code: string; message: string } }>(
      "POST",
      `/api/v1/fighters/${fighter}/message`,
      { message },
    );

  it.each(Object.keys(models))(
    "a fighter on %s answers and completes a tool call round trip",
    async (provider) => {
      const fake = fakeOf(provider);
      const model = models[provider]?.(fake);
      const spawned = await daemon.request<FighterRecord>("POST", "/api/v1/fighters", {
        manifest: {
          name: `on-${provider}`,
          description: provider,
          system_prompt: `You run on ${provider}.`,
          model,
        },
      });
      expect(spawned.status).toBe(201);
      expect(spawned.body.model).toEqual(model);

      fake.reset();
      const hello = await send(`on-${provider}`, "hello from the e2e suite");
      expect(hello.status).toBe(200);
      expect(hello.body.response).toBe("echo: hello from the e2e suite");
      expect(hello.body.usage.output_tokens).toBeGreaterThan(0);
      expect(fake.calls()[0]?.system).toContain(`You run on ${provider}.`);

      fake.reset();
      fake.enqueue({
        tool_calls: [{ name: "memory_store", arguments: { key: "provider", value: provider } }],
      });
      const tool = await send(`on-${provider}`, "remember which provider you are on");
      expect(tool.status).toBe(200);
      expect(tool.body.tool_calls).toEqual([{ name: "memory_store", ok: true }]);
      expect(tool.body.iterations).toBe(2);
      expect(tool.body.response).toContain('{"stored":"provider"}');
      expect(fake.calls()[0]?.tools.sort()).toEqual([
        "conversation_search",
        "memory_recall",
        "memory_store",
        "skill_load",
        "skill_search",
      ]);
      expect(fake.calls()[1]?.tool_results.join("")).toContain('{"stored":"provider"}');
    },
  );

  it("routes a greeting to the cheap tier and a long analysis to the expensive tier", async () => {
    for (const f of Object.values(fakes)) f.reset();
    const greeting = await send("spar", "hi!");
    expect(greeting.body.model).toBe("llama-routed");
    expect(
      fakeOf("ollama")
        .calls()
        .map((c) => c.model),
    ).toEqual(["llama-routed"]);

    const analysis =
      "We must choose between event sourcing and a classic relational schema for billing. Explain the " +
      "trade-offs, compare replay costs for ten million events, evaluate the migration risks step by step, " +
      "and design a rollout plan with a rollback strategy. Why would you pick one over the other? ".repeat(3);
    const heavy = await send("spar", analysis);
    expect(heavy.status).toBe(200);
    expect(heavy.body.model).toBe("claude-routed");
    expect(
      fakeOf("anthropic")
        .calls()
        .map((c) => c.model),
    ).toEqual(["claude-routed"]);
    expect(fakeOf("default").calls()).toHaveLength(0);

    // A short request dense with distinct analysis and planning asks is an expensive one too, and the
    // log says which tier each message took, with its score and reasons.
    const dense = await send(
      "spar",
      "Analyze and compare the architectural trade-offs of event sourcing versus CRUD for a payments ledger, evaluate failure modes, and design a migration strategy with a step-by-step plan and risk assessment.",
    );
    expect(dense.body.model).toBe("claude-routed");
    expect(daemon.output()).toMatch(
      /info routed fighter="spar" tier="expensive" score=\d+ reasons=reasoning words: analyze, compare, trade-offs/,
    );
  });

  it("names the missing key variable at message time, and leaves the fighter idle with nothing stored", async () => {
    const before = await daemon.request<{ bouts: { id: string; message_count: number }[] }>(
      "GET",
      "/api/v1/fighters/spar/bouts",
    );
    const mid = await send("spar", "Explain and compare TCP and UDP.");
    expect(mid.status).toBe(502);
    expect(mid.body.error?.code).toBe("PROVIDER_ERROR");
    expect(mid.body.error?.message).toContain("MID_TIER_KEY");
    expect((await daemon.request<FighterRecord>("GET", "/api/v1/fighters/spar")).body.status).toBe("idle");
    const after = await daemon.request<{ bouts: { id: string; message_count: number }[] }>(
      "GET",
      "/api/v1/fighters/spar/bouts",
    );
    expect(after.body.bouts).toEqual(before.body.bouts);
  });

  it("refuses at spawn a model whose key is missing or whose provider is unknown", async () => {
    const noKey = await daemon.request<{ error: { code: string; message: string } }>(
      "POST",
      "/api/v1/fighters",
      {
        manifest: {
          name: "keyless",
          description: "d",
          system_prompt: "p",
          model: { provider: "anthropic", model: "claude", api_key_env: "NOT_SET_ANYWHERE" },
        },
      },
    );
    expect(noKey.status).toBe(400);
    expect(noKey.body.error.message).toContain("NOT_SET_ANYWHERE");
    const unknown = await daemon.request<{ error: { code: string; message: string } }>(
      "POST",
      "/api/v1/fighters",
      {
        manifest: {
          name: "lost",
          description: "d",
          system_prompt: "p",
          model: { provider: "mystery", model: "m" },
        },
      },
    );
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.message).toMatch(/unknown provider "mystery" \(installed: .*anthropic.*ollama/);
  });

  it("gives PROVIDER_ERROR for a dead provider within its timeout, idle afterwards, the turn recorded as failed", async () => {
    const url = fakeOf("gone").url;
    await daemon.request("POST", "/api/v1/fighters", {
      manifest: {
        name: "ghost",
        description: "d",
        system_prompt: "p",
        model: { provider: "openai_compatible", model: "m", base_url: url, timeout_s: 3, max_retries: 1 },
      },
    });
    const started = Date.now();
    const dead = await send("ghost", "anyone there?");
    expect(dead.status).toBe(502);
    expect(dead.body.error?.code).toBe("PROVIDER_ERROR");
    expect(dead.body.error?.message).toMatch(/ECONNREFUSED|Connection error/);
    expect(Date.now() - started).toBeLessThan(3_500);
    expect((await daemon.request<FighterRecord>("GET", "/api/v1/fighters/ghost")).body.status).toBe("idle");
    // The user's message stays in the bout, in a turn that says it failed and why; no answer was made up.
    const bouts = await daemon.request<{ bouts: { id: string }[] }>("GET", "/api/v1/fighters/ghost/bouts");
    expect(bouts.body.bouts).toHaveLength(1);
    const boutId = bouts.body.bouts[0]?.id;
    const messages = await daemon.request<{ messages: StoredMessage[] }>(
      "GET",
      `/api/v1/bouts/${boutId}/messages`,
    );
    expect(messages.body.messages.map((m) => [m.role, m.content])).toEqual([["user", "anyone there?"]]);
    const turns = await daemon.request<{ turns: { id: string; status: string; error: { code: string } }[] }>(
      "GET",
      `/api/v1/bouts/${boutId}/turns`,
    );
    expect(turns.body.turns).toEqual([
      expect.objectContaining({
        id: messages.body.messages[0]?.turn_id,
        status: "failed",
        error: expect.objectContaining({ code: "PROVIDER_ERROR" }),
      }),
    ]);
  });

  it("gives PROVIDER_TIMEOUT for a provider slower than its timeout", async () => {
    await daemon.request("POST", "/api/v1/fighters", {
      manifest: {
        name: "sloth",
        description: "d",
        system_prompt: "p",
        model: { ...models.ollama?.(fakeOf("ollama")), timeout_s: 1 },
      },
    });
    fakeOf("ollama").reset();
    fakeOf("ollama").enqueue({ text: "too late", delay_ms: 5_000 });
    const started = Date.now();
    const slow = await send("sloth", "take your time");
    expect(slow.status).toBe(504);
    expect(slow.body.error?.code).toBe("PROVIDER_TIMEOUT");
    expect(Date.now() - started).toBeLessThan(2_500);
    expect((await daemon.request<FighterRecord>("GET", "/api/v1/fighters/sloth")).body.status).toBe("idle");
  });

  it("waits out a 429's retry-after and then answers", async () => {
    const fake = fakeOf("anthropic");
    fake.reset();
    fake.enqueue(
      { status: 429, error_message: "slow down", headers: { "retry-after": "1" } },
      { text: "patience pays" },
    );
    const started = Date.now();
    const reply = await send("on-anthropic", "are you there?");
    expect(reply.body.response).toBe("patience pays");
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(fake.calls()).toHaveLength(2);
  });

  it("reports every configured provider in spar doctor, naming key variables, never keys", async () => {
    const result = await daemon.cli(["doctor", "--json"], keys);
    expect(result.code).toBe(1);
    for (const value of Object.values(keys)) expect(result.stdout + result.stderr).not.toContain(value);
    const report = JSON.parse(result.stdout) as {
      providers: {
        provider: string;
        model: string;
        used_by: string[];
        reachable: boolean;
        key: { names: string[]; present?: string };
        detail: string;
      }[];
    };
    const find = (model: string) => report.providers.find((p) => p.model === model);
    expect(find("fake-model")).toMatchObject({ provider: "openai", reachable: true });
    expect(find("fake-model")?.used_by).toEqual(expect.arrayContaining(["default_model", "fighter spar"]));
    expect(find("fake-model")?.key).toEqual({ names: ["OPENAI_API_KEY"], present: "OPENAI_API_KEY" });
    expect(find("llama-routed")).toMatchObject({ reachable: true, used_by: ["model_routing.cheap"] });
    expect(find("claude-routed")).toMatchObject({ reachable: true, key: { present: "ANTHROPIC_API_KEY" } });
    expect(find("mid")).toMatchObject({ reachable: false, key: { names: ["MID_TIER_KEY"] } });
    expect(find("mid")?.detail).toContain("MID_TIER_KEY");
    expect(find("gemini-fake")).toMatchObject({ reachable: true, used_by: ["fighter on-google"] });
    expect(find("m")?.reachable).toBe(false);

    const text = await daemon.cli(["doctor"], keys);
    expect(text.stdout).toMatch(
      /ok {3}openai fake-model .*\(default_model, fighter spar.*\): key OPENAI_API_KEY set/,
    );
    expect(text.stdout).toMatch(/FAIL openai_compatible mid .*key MID_TIER_KEY missing/);
  });
});
