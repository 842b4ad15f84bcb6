/**
 * The price book: shipped prices from the providers' manifests, `[[pricing]]` over them, snapshot
 * ids, the local-only wildcard, the refusals, and a call's cost in micro-units rounded once.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { PricingOverride } from "../sdk/config.js";
import type { ProviderDeclaration } from "../sdk/types.js";
import { costMicros, createPriceBook, fighterUsage, formatCost, type Price } from "./pricing.js";

const ROOT = join(import.meta.dirname, "..");

/** Every provider the bundled plugins declare, as the Ring collects them. */
function bundledProviders(): Map<string, ProviderDeclaration> {
  const providers = new Map<string, ProviderDeclaration>();
  for (const plugin of ["provider-anthropic", "provider-openai", "provider-google", "provider-ollama"]) {
    const manifest = JSON.parse(readFileSync(join(ROOT, "plugins", plugin, "plugin.json"), "utf8")) as {
      contributes: { providers: ProviderDeclaration[] };
    };
    for (const p of manifest.contributes.providers) providers.set(p.id, p);
  }
  return providers;
}

const override = (entry: Partial<PricingOverride>): PricingOverride => ({
  provider: "openai",
  model: "gpt-4o-mini",
  input_per_mtok: 1,
  output_per_mtok: 2,
  ...entry,
});

const flat = (rates: Partial<Price>): Price => ({
  input_per_mtok: 0,
  output_per_mtok: 0,
  cached_input_per_mtok: 0,
  cache_write_per_mtok: 0,
  currency: "USD",
  as_of: "config",
  source: "test",
  ...rates,
});

describe("the shipped price table", () => {
  const book = createPriceBook(bundledProviders());

  it("prices the current models of anthropic, openai and google, with a date and a source each", () => {
    expect(book.price({ provider: "anthropic", model: "claude-sonnet-4-5" })).toEqual({
      input_per_mtok: 3,
      output_per_mtok: 15,
      cached_input_per_mtok: 0.3,
      cache_write_per_mtok: 3.75,
      currency: "USD",
      as_of: "2026-11-28",
      source: "https://platform.claude.com/docs/en/about-claude/pricing",
    });
    expect(book.price({ provider: "openai", model: "gpt-4o-mini" })).toMatchObject({
      input_per_mtok: 0.15,
      output_per_mtok: 0.6,
      cached_input_per_mtok: 0.075,
      source: "https://platform.openai.com/docs/pricing",
    });
    expect(book.price({ provider: "google", model: "gemini-2.5-flash" })).toMatchObject({
      input_per_mtok: 0.3,
      output_per_mtok: 2.5,
      // Not confirmed on the page read: a cache hit is charged as input, never less than it costs.
      cached_input_per_mtok: 0.3,
    });
    for (const [, declaration] of bundledProviders()) {
      for (const entry of declaration.pricing ?? []) {
        expect(entry.as_of).toMatch(/^\d{4}-\d{2}-\d{2}$/);
        expect(entry.source).toMatch(/^https:\/\//);
      }
    }
  });

  it("prices a dated snapshot as its model, unless the snapshot has a price of its own", () => {
    expect(book.price({ provider: "anthropic", model: "claude-sonnet-4-5-20250929" })?.input_per_mtok).toBe(
      3,
    );
    expect(book.price({ provider: "openai", model: "gpt-4o-mini-2024-07-18" })?.input_per_mtok).toBe(0.15);
    expect(book.price({ provider: "openai", model: "gpt-4o-2024-05-13" })?.input_per_mtok).toBe(5);
    expect(book.price({ provider: "openai", model: "gpt-4o-2024-08-06" })?.input_per_mtok).toBe(2.5);
  });

  it("leaves unknown models and every OpenRouter model unpriced", () => {
    expect(book.price({ provider: "openai", model: "gpt-unknown" })).toBeUndefined();
    expect(book.price({ provider: "openrouter", model: "openai/gpt-4o-mini" })).toBeUndefined();
    expect(book.price({ provider: "google", model: "gemini-2.5-pro" })).toBeUndefined();
    expect(book.price({ provider: "nobody", model: "x" })).toBeUndefined();
  });

  it("prices local runners at 0: every Ollama model, an OpenAI-compatible server only on loopback", () => {
    const zero = { input_per_mtok: 0, output_per_mtok: 0, cached_input_per_mtok: 0, cache_write_per_mtok: 0 };
    expect(book.price({ provider: "ollama", model: "llama3.2" })).toMatchObject(zero);
    const local = { provider: "openai_compatible", model: "qwen" };
    expect(book.price({ ...local, base_url: "http://127.0.0.1:8000/v1" })).toMatchObject(zero);
    expect(book.price({ ...local, base_url: "http://localhost:1234/v1" })).toMatchObject(zero);
    expect(book.price({ ...local, base_url: "http://[::1]:8000/v1" })).toMatchObject(zero);
    expect(book.price({ ...local, base_url: "https://api.groq.com/openai/v1" })).toBeUndefined();
    expect(book.price(local)).toBeUndefined();
  });
});

describe("[[pricing]]", () => {
  it("overrides a shipped price and adds a model, OpenRouter's and a wildcard included", () => {
    const book = createPriceBook(bundledProviders(), [
      override({
        model: "gpt-4o-mini",
        input_per_mtok: 0.1,
        output_per_mtok: 0.5,
        cached_input_per_mtok: 0.05,
      }),
      override({
        provider: "openrouter",
        model: "openai/gpt-4o-mini",
        input_per_mtok: 0.15,
        output_per_mtok: 0.6,
      }),
      override({ provider: "openai_compatible", model: "*", input_per_mtok: 0.2, output_per_mtok: 0.2 }),
    ]);
    expect(book.price({ provider: "openai", model: "gpt-4o-mini" })).toEqual({
      input_per_mtok: 0.1,
      output_per_mtok: 0.5,
      cached_input_per_mtok: 0.05,
      cache_write_per_mtok: 0.1,
      currency: "USD",
      as_of: "config",
      source: "config.toml [[pricing]]",
    });
    expect(book.price({ provider: "openrouter", model: "openai/gpt-4o-mini" })?.output_per_mtok).toBe(0.6);
    // The operator's wildcard holds wherever the server is.
    expect(
      book.price({ provider: "openai_compatible", model: "m", base_url: "https://api.groq.com/openai/v1" }),
    ).toMatchObject({ input_per_mtok: 0.2 });
    // The others keep the shipped prices.
    expect(book.price({ provider: "openai", model: "gpt-4o" })?.input_per_mtok).toBe(2.5);
  });

  it.each([
    ["negative", -0.01, "pricing.0.input_per_mtok"],
    ["absurd", 1000.5, "pricing.0.input_per_mtok"],
    ["not a number (TOML nan)", Number.NaN, "pricing.0.input_per_mtok"],
    ["infinite", Number.POSITIVE_INFINITY, "pricing.0.input_per_mtok"],
  ])("refuses a %s price at start, naming the key (CONFIG_INVALID)", (_what, value, key) => {
    expect(() => createPriceBook(new Map(), [override({ input_per_mtok: value })])).toThrow(
      expect.objectContaining({ code: "CONFIG_INVALID", message: expect.stringContaining(`"${key}"`) }),
    );
  });

  it("refuses an optional rate out of range, and one model priced twice", () => {
    expect(() => createPriceBook(new Map(), [override({ cache_write_per_mtok: -1 })])).toThrow(
      /"pricing\.0\.cache_write_per_mtok" must be a number from 0 to 1000/,
    );
    expect(() =>
      createPriceBook(new Map(), [override({}), override({ model: "GPT-4o-mini", input_per_mtok: 3 })]),
    ).toThrow(
      expect.objectContaining({ code: "CONFIG_INVALID", message: expect.stringContaining('"pricing.1"') }),
    );
  });
});

describe("costMicros", () => {
  const mini = flat({ input_per_mtok: 0.15, output_per_mtok: 0.6, cached_input_per_mtok: 0.075 });

  it("is tokens × price per million, in micro-units: exact where floating point is not", () => {
    expect(costMicros(mini, { input_tokens: 1000, output_tokens: 100 })).toBe(210);
    expect(costMicros(mini, { input_tokens: 1_000_000, output_tokens: 1_000_000 })).toBe(750_000);
    // 0.1 + 0.2 is not 0.3 in floating point; 1 token at each is 0.3 micro-units, rounded to 0.
    const tenths = flat({ input_per_mtok: 0.1, output_per_mtok: 0.2 });
    expect(costMicros(tenths, { input_tokens: 10, output_tokens: 10 })).toBe(3);
  });

  it("charges cached and cache-write tokens at their prices, the rest of the input at the input price", () => {
    const sonnet = flat({
      input_per_mtok: 3,
      output_per_mtok: 15,
      cached_input_per_mtok: 0.3,
      cache_write_per_mtok: 3.75,
    });
    // 100 fresh × 3 + 600 cached × 0.3 + 300 written × 3.75 + 50 out × 15 = 300 + 180 + 1125 + 750
    expect(
      costMicros(sonnet, {
        input_tokens: 1000,
        output_tokens: 50,
        cached_tokens: 600,
        cache_write_tokens: 300,
      }),
    ).toBe(2355);
  });

  it("rounds half up, once per call", () => {
    // 3 × 0.15 = 0.45 → 0; 10 × 0.15 = 1.5 → 2; 7 × 0.075 = 0.525 → 1
    expect(costMicros(mini, { input_tokens: 3, output_tokens: 0 })).toBe(0);
    expect(costMicros(mini, { input_tokens: 10, output_tokens: 0 })).toBe(2);
    expect(costMicros(mini, { input_tokens: 7, output_tokens: 0, cached_tokens: 7 })).toBe(1);
  });

  it("stays exact past 2^53 intermediate products, and never goes below zero", () => {
    const dear = flat({ input_per_mtok: 999.999999, output_per_mtok: 1000 });
    expect(costMicros(dear, { input_tokens: 2_000_000_000, output_tokens: 0 })).toBe(1_999_999_998_000);
    // A provider that reports more cached tokens than input: nothing fresh, not less than nothing.
    expect(costMicros(mini, { input_tokens: 5, output_tokens: 0, cached_tokens: 10 })).toBe(1);
  });
});

describe("formatCost and fighterUsage", () => {
  it("shows micro-units as dollars, and a null cost as unpriced", () => {
    expect(formatCost(1_234)).toBe("$0.001234");
    expect(formatCost(2_500_000)).toBe("$2.500000");
    expect(formatCost(null)).toBe("unpriced");
  });

  it("sums the priced models' cost, null when none is priced, and counts the unpriced calls", () => {
    const row = { provider: "p", model: "m", requests: 2, input_tokens: 10, output_tokens: 5 };
    const cache = { cached_tokens: 0, cache_write_tokens: 0 };
    expect(
      fighterUsage("ada", [
        { ...row, ...cache, cost_micros: 30, unpriced_requests: 0 },
        { ...row, ...cache, model: "n", cost_micros: null, unpriced_requests: 2 },
      ]),
    ).toMatchObject({
      fighter: "ada",
      totals: { requests: 4, input_tokens: 20, output_tokens: 10 },
      cost: { cost_micros: 30, currency: "USD", unpriced_requests: 2 },
    });
    expect(fighterUsage("bo", [{ ...row, ...cache, cost_micros: null, unpriced_requests: 2 }]).cost).toEqual({
      cost_micros: null,
      currency: "USD",
      unpriced_requests: 2,
    });
  });
});
