/**
 * The embedding contract: `ring.llm.embed` with the real provider plugins (loaded by the plugin host
 * from dist/) against fakes that speak each API to its official SDK, the settings built from
 * `[memory.embeddings]` in a real config.toml, so the key pairing is the operator's.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../kernel/host/config.js";
import { discoverPlugins, pluginRoots } from "../../kernel/host/plugin-manifest.js";
import { createRing, type Ring } from "../../kernel/ring.js";
import { createLogger } from "../../lib/logger.js";
import type { EmbeddingsConfig } from "../../sdk/config.js";
import type { ModelSettings } from "../../sdk/types.js";
import { KERNEL_VERSION } from "../../sdk/version.js";
import { type FakeEmbeddings, hashedEmbedding } from "../fakes/embeddings.js";
import { startFakeGemini } from "../fakes/gemini-server.js";
import { startFakeOllama } from "../fakes/ollama-server.js";
import { startFakeOpenAI } from "../fakes/openai-server.js";
import type { FakeLlmServer } from "../fakes/scripted.js";
import { tempHome } from "../helpers/daemon.js";
import { failure } from "../helpers/provider.js";

const KEY_ENV = "CONTRACT_EMBED_KEY";
const KEY = "contract-embed-secret-0123";
const OTHER_ENV = "CONTRACT_OTHER_KEY";
const env = { [KEY_ENV]: KEY, [OTHER_ENV]: "another-secret-4567", OPENAI_API_KEY: "sk-official" };

type Fake = FakeLlmServer & FakeEmbeddings;

interface EmbedCase {
  provider: string;
  start: () => Promise<Fake>;
  /** The `[memory.embeddings]` table for the fake at `url`. */
  table: (url: string) => string;
  /** What reaches the server as the key: the paired one, the driver's placeholder, or none. */
  key: string | undefined;
}

const keyed = (provider: string) => (url: string) =>
  `provider = "${provider}"\nmodel = "emb-fake"\nbase_url = "${url}"\napi_key_env = "${KEY_ENV}"\nbatch_size = 3\n`;

const CASES: EmbedCase[] = [
  { provider: "openai", start: startFakeOpenAI, table: keyed("openai"), key: KEY },
  { provider: "openrouter", start: startFakeOpenAI, table: keyed("openrouter"), key: KEY },
  {
    provider: "openai_compatible",
    start: startFakeOpenAI,
    table: (url) =>
      `provider = "openai_compatible"\nmodel = "emb-fake"\nbase_url = "${url}"\nbatch_size = 3\n`,
    key: "no-key",
  },
  { provider: "google", start: startFakeGemini, table: keyed("google"), key: KEY },
  {
    provider: "ollama",
    start: startFakeOllama,
    table: (url) => `provider = "ollama"\nmodel = "emb-fake"\nbase_url = "${url}"\nbatch_size = 3\n`,
    key: undefined,
  },
];

/** A Ring on a data dir whose config.toml holds `[memory.embeddings]`, and the settings built from it. */
function ringWith(table: string): { ring: Ring; settings: ModelSettings } {
  const home = tempHome();
  writeFileSync(join(home, "config.toml"), `[memory.embeddings]\n${table}`);
  const config = loadConfig(home, {});
  const ring = createRing({
    config,
    home,
    env,
    version: KERNEL_VERSION,
    plugins: discoverPlugins(pluginRoots(home, []), KERNEL_VERSION),
    log: createLogger(() => undefined),
  });
  return { ring, settings: settingsOf(config.memory.embeddings) };
}

/** The model settings a memory plugin builds from `[memory.embeddings]`. */
function settingsOf(embeddings: EmbeddingsConfig | undefined): ModelSettings {
  if (!embeddings) throw new Error("no [memory.embeddings]");
  const { provider, model, base_url, api_key_env } = embeddings;
  return { provider, model, ...(base_url ? { base_url } : {}), ...(api_key_env ? { api_key_env } : {}) };
}

describe.each(CASES)("ring.llm.embed with $provider", (c) => {
  let fake: Fake;
  let ring: Ring;
  let settings: ModelSettings;

  beforeAll(async () => {
    fake = await c.start();
    ({ ring, settings } = ringWith(c.table(fake.url)));
  });
  afterAll(() => fake.close());

  it("embeds in the configured batches, in order, with the paired key", async () => {
    fake.reset();
    const input = ["Ada moved to Lisbon", "the cat sleeps", "tax report", "a fourth text", "fifth"];
    const reply = await ring.services.llm.embed(settings, { input, purpose: "document", dimensions: 16 });
    expect(reply.vectors).toEqual(input.map((t) => hashedEmbedding(t, 16)));
    expect(fake.embedCalls.map((call) => call.inputs.length)).toEqual([3, 2]);
    expect(fake.embedCalls.every((call) => call.dimensions === 16)).toBe(true);
    expect(fake.embedKeys).toEqual([c.key, c.key]);
  });

  it("retries a 500 and a 429, not a 400", async () => {
    fake.reset();
    fake.failEmbeddings(1, { status: 500 });
    fake.failEmbeddings(1, { status: 429, retry_after_s: 0 });
    const reply = await ring.services.llm.embed(settings, { input: ["x"] });
    expect(reply.vectors).toHaveLength(1);
    expect(fake.embedCalls).toHaveLength(3);
    fake.reset();
    fake.failEmbeddings(1, { status: 400, message: "bad input" });
    const err = await failure(ring.services.llm.embed(settings, { input: ["x"] }));
    expect(err.code).toBe("PROVIDER_ERROR");
    expect(err.extra.provider).toBe(c.provider);
    expect(err.message).not.toContain(KEY);
    expect(fake.embedCalls).toHaveLength(1);
  });

  it("sends a key only to the endpoint it is paired with", async () => {
    fake.reset();
    // The same server under another URL spelling is another endpoint: not configured, refused unsent.
    const elsewhere = { ...settings, base_url: fake.url.replace("127.0.0.1", "localhost") };
    const moved = await failure(ring.services.llm.embed(elsewhere, { input: ["x"] }));
    expect(moved.code).toBe("PROVIDER_ERROR");
    expect(moved.extra.retryable).toBe(false);
    // Another variable than the paired one is refused too.
    const otherKey = await failure(
      ring.services.llm.embed({ ...settings, api_key_env: OTHER_ENV }, { input: ["x"] }),
    );
    expect(otherKey.message).toContain(OTHER_ENV);
    expect(fake.embedCalls).toEqual([]);
  });
});

describe("ring.llm.embed without an embeddings API", () => {
  it("refuses anthropic with PROVIDER_ERROR naming it, its key paired and present", async () => {
    const table = `provider = "anthropic"\nmodel = "claude-fake"\nbase_url = "http://127.0.0.1:9/v1"\napi_key_env = "${KEY_ENV}"\n`;
    const { ring, settings } = ringWith(table);
    const err = await failure(ring.services.llm.embed(settings, { input: ["x"] }));
    expect(err.code).toBe("PROVIDER_ERROR");
    expect(err.message).toMatch(/^anthropic: this provider has no embeddings API/);
    expect(err.extra).toEqual({ provider: "anthropic", retryable: false });
  });
});
