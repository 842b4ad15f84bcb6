import { describe, expect, it } from "vitest";
import { loadConfig } from "../kernel/host/config.js";
import type { SparConfig } from "../sdk/config.js";
import type { ModelSettings, ProviderDeclaration } from "../sdk/types.js";
import { createProviderPolicy, normalizeBaseUrl, resolveCredential } from "./provider-keys.js";

const DECLARATIONS = new Map<string, ProviderDeclaration>([
  ["openai", { id: "openai", key_env: ["OPENAI_API_KEY"] }],
  ["openai_compatible", { id: "openai_compatible", requires_base_url: true }],
  ["anthropic", { id: "anthropic", key_env: ["ANTHROPIC_API_KEY"] }],
  ["google", { id: "google", key_env: ["GEMINI_API_KEY", "GOOGLE_API_KEY"] }],
  ["ollama", { id: "ollama" }],
]);

const ENV = {
  OPENAI_API_KEY: "sk-openai",
  ANTHROPIC_API_KEY: "sk-ant",
  GOOGLE_API_KEY: "g-key",
  PROXY_KEY: "sk-proxy",
  SPAR_MASTER_KEY: "the-master-secret-which-must-never-leave-0000",
  HOME: "/home/someone",
};

function config(overrides: Partial<SparConfig> = {}): SparConfig {
  return { ...loadConfig("/nonexistent-spar-home", {}), ...overrides };
}

function check(settings: ModelSettings, c: SparConfig = config()) {
  return resolveCredential(settings, createProviderPolicy(c, DECLARATIONS, "/h"), ENV);
}

const PROXY = "http://127.0.0.1:8080/v1";

describe("which key a model setting may send", () => {
  it("sends a provider's own key to its official endpoint", () => {
    expect(check({ provider: "openai", model: "m" })).toMatchObject({
      ok: true,
      credential: { key_env: "OPENAI_API_KEY", api_key: "sk-openai" },
    });
    // The second declared variable is used when the first is unset.
    expect(check({ provider: "google", model: "m" })).toMatchObject({
      ok: true,
      credential: { key_env: "GOOGLE_API_KEY" },
    });
  });

  it("never sends a key to a base_url the operator did not pair it with", () => {
    const attack = check({ provider: "anthropic", model: "m", base_url: "http://127.0.0.1:9/evil" });
    expect(attack.ok).toBe(false);
    if (!attack.ok) expect(attack.problem).toMatch(/not an endpoint configured/);
    const named = check({
      provider: "anthropic",
      model: "m",
      base_url: "http://127.0.0.1:9/evil",
      api_key_env: "ANTHROPIC_API_KEY",
    });
    expect(named.ok).toBe(false);
  });

  it("never reads SPAR_* or an undeclared variable as a key", () => {
    for (const api_key_env of ["SPAR_MASTER_KEY", "spar_master_key"]) {
      const result = check({ provider: "openai", model: "m", api_key_env });
      expect(result.ok).toBe(false);
      if (!result.ok) expect(result.problem).toMatch(/never sent as a provider key/);
    }
    const home = check({ provider: "openai", model: "m", api_key_env: "HOME" });
    expect(home.ok).toBe(false);
    if (!home.ok) expect(home.problem).toMatch(/"HOME" is not paired/);
  });

  it("lets a manifest pick an endpoint the operator paired with a key, and nothing else with it", () => {
    const c = config({
      providers: {
        endpoints: [{ provider: "openai", base_url: `${PROXY}/`, api_key_env: "PROXY_KEY" }],
        allow_manifest_base_url: [],
      },
    });
    expect(check({ provider: "openai", model: "m", base_url: PROXY }, c)).toMatchObject({
      ok: true,
      credential: { key_env: "PROXY_KEY", api_key: "sk-proxy" },
    });
    // The same URL with another key, or another provider, is not the pairing.
    expect(
      check({ provider: "openai", model: "m", base_url: PROXY, api_key_env: "OPENAI_API_KEY" }, c).ok,
    ).toBe(false);
    expect(check({ provider: "openai_compatible", model: "m", base_url: PROXY }, c).ok).toBe(false);
  });

  it("pairs default_model and the routing tiers as the operator wrote them", () => {
    const c = config({
      default_model: { provider: "openai", model: "m", base_url: PROXY },
      model_routing: {
        enabled: false,
        cheap: { provider: "ollama", model: "l", base_url: "http://10.0.0.5:11434" },
      },
    });
    // default_model's base_url without api_key_env pairs the provider's own variable with it.
    expect(check({ provider: "openai", model: "other", base_url: PROXY }, c)).toMatchObject({
      ok: true,
      credential: { key_env: "OPENAI_API_KEY" },
    });
    expect(check({ provider: "ollama", model: "x", base_url: "http://10.0.0.5:11434/" }, c)).toMatchObject({
      ok: true,
      credential: {},
    });
  });

  it("pairs [memory.embeddings]' base_url with its api_key_env like any endpoint, and nothing else with it", () => {
    const base = config();
    const c = config({
      memory: {
        ...base.memory,
        embeddings: {
          provider: "openai",
          model: "emb",
          base_url: `${PROXY}/`,
          api_key_env: "PROXY_KEY",
          batch_size: 64,
          min_similarity: 0.2,
        },
      },
    });
    const settings = { provider: "openai", model: "emb", base_url: PROXY, api_key_env: "PROXY_KEY" };
    expect(check(settings, c)).toMatchObject({
      ok: true,
      credential: { key_env: "PROXY_KEY", api_key: "sk-proxy" },
    });
    // Without the table, the same setting is an unpaired key.
    expect(check(settings).ok).toBe(false);
    // Its key goes nowhere else: not to another URL, not to the official endpoint, not to another provider.
    expect(check({ ...settings, base_url: "http://127.0.0.1:9/evil" }, c).ok).toBe(false);
    expect(check({ provider: "openai", model: "emb", api_key_env: "PROXY_KEY" }, c).ok).toBe(false);
    expect(check({ ...settings, provider: "openai_compatible" }, c).ok).toBe(false);
    // An Ollama runner on another machine needs no key, but must be configured to be reached.
    const ollama = config({
      memory: {
        ...base.memory,
        embeddings: {
          provider: "ollama",
          model: "nomic",
          base_url: "http://10.0.0.7:11434",
          batch_size: 64,
          min_similarity: 0.2,
        },
      },
    });
    expect(
      check({ provider: "ollama", model: "nomic", base_url: "http://10.0.0.7:11434" }, ollama),
    ).toMatchObject({
      ok: true,
      credential: {},
    });
    expect(check({ provider: "ollama", model: "nomic", base_url: "http://10.0.0.7:11434" }).ok).toBe(false);
  });

  it("allows a listed keyless base_url, sending no key, only for providers that need none", () => {
    const c = config({ providers: { endpoints: [], allow_manifest_base_url: [PROXY] } });
    expect(check({ provider: "openai_compatible", model: "m", base_url: PROXY }, c)).toEqual({
      ok: true,
      credential: {},
      names: [],
    });
    expect(check({ provider: "ollama", model: "m", base_url: "http://127.0.0.1:9999" }, c).ok).toBe(false);
    const keyed = check({ provider: "openai", model: "m", base_url: PROXY }, c);
    expect(keyed.ok).toBe(false);
    if (!keyed.ok) expect(keyed.problem).toMatch(/no key is sent to/);
  });

  it("says which variable is missing, never a value", () => {
    const result = resolveCredential(
      { provider: "anthropic", model: "m" },
      createProviderPolicy(config(), DECLARATIONS, "/h"),
      {},
    );
    expect(result).toMatchObject({ ok: false, names: ["ANTHROPIC_API_KEY"] });
    if (!result.ok) expect(result.problem).toContain("set ANTHROPIC_API_KEY");
  });

  it("compares base URLs by origin and path", () => {
    expect(normalizeBaseUrl("HTTP://LocalHost:80/v1/")).toBe("http://localhost/v1");
    expect(normalizeBaseUrl("http://user:pw@example.com")).toBeUndefined();
    expect(normalizeBaseUrl("file:///etc/passwd")).toBeUndefined();
  });
});

describe("config.toml", () => {
  it("refuses a SPAR_* variable as a provider key anywhere", async () => {
    const { mkdtempSync, writeFileSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const home = mkdtempSync(join(tmpdir(), "spar-config-"));
    writeFileSync(
      join(home, "config.toml"),
      '[default_model]\nprovider = "openai"\nmodel = "m"\napi_key_env = "SPAR_MASTER_KEY"\n',
    );
    expect(() => loadConfig(home, {})).toThrow(/default_model.api_key_env = "SPAR_MASTER_KEY"/);
    writeFileSync(
      join(home, "config.toml"),
      '[memory.embeddings]\nprovider = "openai"\nmodel = "m"\napi_key_env = "SPAR_MASTER_KEY"\n',
    );
    expect(() => loadConfig(home, {})).toThrow(/memory.embeddings.api_key_env = "SPAR_MASTER_KEY"/);
  });
});
