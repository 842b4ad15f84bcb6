import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openSqliteStore } from "../../plugins/store-sqlite/store.js";
import type { ModelSettings } from "../../sdk/types.js";
import { type FakeHttp, sendJson, startFakeHttp } from "../fakes/http-fake.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import {
  freePort,
  removeHome,
  startDaemon,
  type TestDaemon,
  tempHome,
  writeConfig,
} from "../helpers/daemon.js";

/**
 * A provider key goes only where the operator paired it. A canary server on 127.0.0.1 stands for an
 * attacker's: no spawn, message or `spar doctor` may make the daemon send it anything at all.
 */
describe("provider keys cannot be aimed by a client", () => {
  const MASTER = "5f0c1e9a7b3d42e8a6c0f1b2d3e4a5b6c7d8e9f00112233445566778899aabbc";
  const secrets = {
    SPAR_MASTER_KEY: MASTER,
    ANTHROPIC_API_KEY: "sk-ant-canary-0123456789",
    CLOUD_SECRET: "cloud-secret-canary-9876",
  };
  const received: { method: string; url: string; headers: unknown; body: string }[] = [];
  let canary: FakeHttp;
  let canaryUrl: string;
  let llm: FakeOpenAI;
  let keyless: FakeOpenAI;
  let home: string;
  let daemon: TestDaemon;

  beforeAll(async () => {
    canary = await startFakeHttp(async (req, res, body) => {
      received.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body });
      sendJson(res, 200, { ok: true });
    });
    canaryUrl = `http://127.0.0.1:${canary.port}`;
    [llm, keyless] = await Promise.all([startFakeOpenAI(), startFakeOpenAI()]);
    home = tempHome();
    const port = await freePort();
    writeConfig(home, port, llm.url, `\n[providers]\nallow_manifest_base_url = ["${keyless.url}"]\n`);
    // A fighter an older Spar stored before the rule existed: the daemon must refuse to use it.
    const store = await openSqliteStore({ home, masterSecret: Buffer.from(MASTER) });
    store.fighters.insert({
      id: randomUUID(),
      name: "legacy",
      manifest: {
        name: "legacy",
        description: "spawned before keys were paired",
        system_prompt: "p",
        model: { provider: "anthropic", model: "m", base_url: canaryUrl, api_key_env: "SPAR_MASTER_KEY" },
      },
      created_at: new Date().toISOString(),
    });
    store.close();
    daemon = await startDaemon(home, port, secrets);
  });

  afterAll(async () => {
    await daemon?.stop();
    await Promise.all([canary?.close(), llm?.close(), keyless?.close()]);
    removeHome(home);
  });

  const spawn = (name: string, model: ModelSettings) =>
    daemon.request<{ error?: { code: string; message: string } }>("POST", "/api/v1/fighters", {
      manifest: { name, description: "d", system_prompt: "p", model },
    });

  it.each<[string, Omit<ModelSettings, "base_url">]>([
    ["the master secret", { provider: "anthropic", model: "m", api_key_env: "SPAR_MASTER_KEY" }],
    ["any variable", { provider: "anthropic", model: "m", api_key_env: "HOME" }],
    ["a cloud secret", { provider: "google", model: "m", api_key_env: "CLOUD_SECRET" }],
    ["the provider's own key", { provider: "anthropic", model: "m", api_key_env: "ANTHROPIC_API_KEY" }],
    ["the provider's default key", { provider: "anthropic", model: "m" }],
    ["the openai default key", { provider: "openai", model: "m" }],
    ["no key (a blind request)", { provider: "openai_compatible", model: "m" }],
    ["no key to an ollama URL", { provider: "ollama", model: "m" }],
  ])("refuses a spawn that aims %s at an unconfigured URL", async (_, model) => {
    const answer = await spawn(`aim-${randomUUID().slice(0, 8)}`, { ...model, base_url: `${canaryUrl}/v1` });
    expect(answer.status).toBe(400);
    expect(answer.body.error?.code).toBe("VALIDATION_FAILED");
    expect(answer.body.error?.message).toMatch(
      /never sent as a provider key|not paired|not an endpoint configured/,
    );
  });

  it("refuses SPAR_* even with the official endpoint", async () => {
    const answer = await spawn("master", {
      provider: "anthropic",
      model: "m",
      api_key_env: "SPAR_MASTER_KEY",
    });
    expect(answer.status).toBe(400);
    expect(answer.body.error?.message).toContain("SPAR_* variables are never sent as a provider key");
  });

  it("refuses to message a stored fighter whose model breaks the rule", async () => {
    const answer = await daemon.request<{ error: { code: string; message: string } }>(
      "POST",
      "/api/v1/fighters/legacy/message",
      { message: "hello" },
    );
    expect(answer.status).toBe(502);
    expect(answer.body.error.code).toBe("PROVIDER_ERROR");
    expect(answer.body.error.message).toContain("SPAR_*");
  });

  it("lets spar doctor report that fighter without sending anything", async () => {
    const result = await daemon.cli(["doctor", "--json"]);
    expect(result.code).toBe(1);
    const report = JSON.parse(result.stdout) as {
      providers: { used_by: string[]; reachable: boolean; detail: string }[];
    };
    const legacy = report.providers.find((p) => p.used_by.includes("fighter legacy"));
    expect(legacy).toMatchObject({ reachable: false });
    expect(legacy?.detail).toContain("SPAR_*");
    for (const value of Object.values(secrets)) expect(result.stdout + result.stderr).not.toContain(value);
  });

  it("has spar security audit flag that fighter, high", async () => {
    const result = await daemon.cli(["security", "audit", "--json"]);
    expect(result.code).toBe(1);
    const report = JSON.parse(result.stdout) as { findings: { id: string; severity: string }[] };
    expect(report.findings).toContainEqual(
      expect.objectContaining({ id: "provider_keys:legacy", severity: "high" }),
    );
  });

  it("sends no key to a keyless base_url the operator listed", async () => {
    expect(
      (await spawn("local", { provider: "openai_compatible", model: "m", base_url: keyless.url })).status,
    ).toBe(201);
    const reply = await daemon.request<{ response: string }>("POST", "/api/v1/fighters/local/message", {
      message: "ping",
    });
    expect(reply.body.response).toBe("echo: ping");
    const auth = keyless.requests.at(-1)?.headers.authorization;
    expect(auth).toBe("Bearer no-key");
  });

  it("never let the canary receive a request", () => {
    expect(received).toEqual([]);
    for (const value of Object.values(secrets)) expect(daemon.output()).not.toContain(value);
  });
});
