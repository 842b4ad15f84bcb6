/**
 * What a model call costs (issue 31): the price of a model from its provider's manifest
 * (`contributes.providers[].pricing`, with the date and page each price was read from) under the
 * operator's `[[pricing]]` in config.toml, and a call's cost from the usage its provider reported,
 * in micro-units of the currency (USD), rounded once per call. A model without a price is
 * "unpriced": its calls are recorded with a null cost, never a guessed one.
 */
import type { PricingOverride, SparConfig } from "../sdk/config.js";
import { SparError } from "../sdk/errors.js";
import { MAX_PRICE_PER_MTOK } from "../sdk/schemas.js";
import type { FighterUsage } from "../sdk/services.js";
import type { UsageSummary } from "../sdk/store-types.js";
import type { ModelPrice, ModelSettings, ProviderDeclaration, Usage } from "../sdk/types.js";
import { isLoopbackHost } from "./loopback.js";

/** A price resolved for one model: every rate present, per million tokens. */
export interface Price {
  input_per_mtok: number;
  output_per_mtok: number;
  cached_input_per_mtok: number;
  cache_write_per_mtok: number;
  currency: "USD";
  /** `config` for a `[[pricing]]` entry, else the date the shipped price was read. */
  as_of: string;
  source: string;
}

export interface PriceBook {
  /** The price of a model setting, or undefined when it is unpriced. */
  price(model: Pick<ModelSettings, "provider" | "model" | "base_url">): Price | undefined;
}

/** A dated snapshot of a model id (`-20250929`, `-2024-07-18`): priced as the id without it. */
const SNAPSHOT = /-(?:\d{8}|\d{4}-\d{2}-\d{2})$/;
const RATES = ["input_per_mtok", "output_per_mtok", "cached_input_per_mtok", "cache_write_per_mtok"] as const;

/**
 * The price book of the providers' manifests and the operator's `[[pricing]]` entries, which win.
 * Refuses (CONFIG_INVALID, naming the key) a `[[pricing]]` rate that is not a finite number from 0
 * to 1,000 (TOML's `nan` passes the schema's bounds) and a provider/model given twice.
 *
 * @example
 * const book = createPriceBook(providers, config.pricing);
 * book.price({ provider: "openai", model: "gpt-4o-mini-2024-07-18" }); // gpt-4o-mini's price
 */
export function createPriceBook(
  providers: ReadonlyMap<string, Pick<ProviderDeclaration, "pricing">>,
  overrides: SparConfig["pricing"] = [],
): PriceBook {
  const table = new Map<string, { price: Price; localOnly: boolean }>();
  for (const [provider, declaration] of providers) {
    for (const entry of declaration.pricing ?? []) {
      table.set(keyOf(provider, entry.model), {
        price: shipped(entry),
        localOnly: entry.local_only === true,
      });
    }
  }
  const given = new Set<string>();
  for (const [index, entry] of overrides.entries()) {
    checkOverride(entry, index);
    const key = keyOf(entry.provider, entry.model);
    if (given.has(key)) {
      throw new SparError(
        "CONFIG_INVALID",
        `config.toml: "pricing.${index}" prices ${entry.provider} ${entry.model} a second time`,
        { path: `pricing.${index}` },
      );
    }
    given.add(key);
    table.set(key, { price: overridden(entry), localOnly: false });
  }
  const find = (provider: string, model: string) => table.get(keyOf(provider, model));
  return {
    price(settings) {
      const exact = find(settings.provider, settings.model);
      if (exact) return exact.price;
      const base = settings.model.replace(SNAPSHOT, "");
      const snapshot = base !== settings.model ? find(settings.provider, base) : undefined;
      if (snapshot) return snapshot.price;
      const any = find(settings.provider, "*");
      if (!any || (any.localOnly && !onLoopback(settings.base_url))) return undefined;
      return any.price;
    },
  };
}

/**
 * The cost of one call in micro-units of its price's currency: fresh input (input less cached and
 * cache-write tokens) at the input price, cached and cache-write tokens at theirs, output at the
 * output price, rounded half up once for the whole call. Integer arithmetic throughout: a rate is
 * taken to the micro-unit per million tokens, so tokens × rate is exact.
 *
 * @example
 * costMicros(price, { input_tokens: 1000, output_tokens: 100 }); // 1000 × 0.15 + 100 × 0.60 = 210
 */
export function costMicros(price: Price, usage: Usage): number {
  const cached = usage.cached_tokens ?? 0;
  const written = usage.cache_write_tokens ?? 0;
  const fresh = Math.max(0, usage.input_tokens - cached - written);
  const rate = (perMtok: number) => BigInt(Math.round(perMtok * 1_000_000));
  const count = (tokens: number) => BigInt(Math.max(0, Math.trunc(tokens)));
  const scaled =
    count(fresh) * rate(price.input_per_mtok) +
    count(cached) * rate(price.cached_input_per_mtok) +
    count(written) * rate(price.cache_write_per_mtok) +
    count(usage.output_tokens) * rate(price.output_per_mtok);
  return Number((scaled + 500_000n) / 1_000_000n);
}

/** A cost in micro-units as the currency, for people: `$0.001234`, or `unpriced`. */
export function formatCost(micros: number | null | undefined, currency = "USD"): string {
  if (micros === null || micros === undefined) return "unpriced";
  const amount = (micros / 1_000_000).toFixed(6);
  return currency === "USD" ? `$${amount}` : `${amount} ${currency}`;
}

/** A fighter's usage as GET /api/v1/fighters/:id/usage answers it: per model, summed, and its cost. */
export function fighterUsage(fighter: string, usage: UsageSummary[]): FighterUsage {
  const sum = (k: "requests" | "input_tokens" | "output_tokens" | "unpriced_requests") =>
    usage.reduce((n, u) => n + u[k], 0);
  const priced = usage.filter((u) => u.cost_micros !== null);
  return {
    fighter,
    usage,
    totals: {
      requests: sum("requests"),
      input_tokens: sum("input_tokens"),
      output_tokens: sum("output_tokens"),
    },
    cost: {
      cost_micros: priced.length > 0 ? priced.reduce((n, u) => n + (u.cost_micros ?? 0), 0) : null,
      currency: "USD",
      unpriced_requests: sum("unpriced_requests"),
    },
  };
}

function keyOf(provider: string, model: string): string {
  return `${provider}\u0000${model.toLowerCase()}`;
}

function shipped(entry: ModelPrice): Price {
  return {
    input_per_mtok: entry.input_per_mtok,
    output_per_mtok: entry.output_per_mtok,
    cached_input_per_mtok: entry.cached_input_per_mtok ?? entry.input_per_mtok,
    cache_write_per_mtok: entry.cache_write_per_mtok ?? entry.input_per_mtok,
    currency: entry.currency,
    as_of: entry.as_of,
    source: entry.source,
  };
}

function overridden(entry: PricingOverride): Price {
  return {
    input_per_mtok: entry.input_per_mtok,
    output_per_mtok: entry.output_per_mtok,
    cached_input_per_mtok: entry.cached_input_per_mtok ?? entry.input_per_mtok,
    cache_write_per_mtok: entry.cache_write_per_mtok ?? entry.input_per_mtok,
    currency: "USD",
    as_of: "config",
    source: "config.toml [[pricing]]",
  };
}

function checkOverride(entry: PricingOverride, index: number): void {
  for (const rate of RATES) {
    const value = entry[rate];
    if (value === undefined) continue;
    if (!Number.isFinite(value) || value < 0 || value > MAX_PRICE_PER_MTOK) {
      throw new SparError(
        "CONFIG_INVALID",
        `config.toml: "pricing.${index}.${rate}" must be a number from 0 to ${MAX_PRICE_PER_MTOK} (USD per million tokens), got ${value}`,
        { path: `pricing.${index}.${rate}` },
      );
    }
  }
}

function onLoopback(baseUrl: string | undefined): boolean {
  if (!baseUrl) return false;
  const host = URL.parse(baseUrl)?.hostname;
  return isLoopbackHost(host?.startsWith("[") ? host.slice(1, -1) : host);
}
