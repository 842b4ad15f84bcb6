import { describe, expect, it } from "vitest";
import type { SparConfig } from "../sdk/config.js";
import { createPromptCaching, promptCacheKey } from "./prompt-cache.js";

const providers = (extra: Record<string, unknown> = {}) =>
  ({ providers: { endpoints: [], allow_manifest_base_url: [], ...extra } }) as unknown as Pick<
    SparConfig,
    "providers"
  >;

describe("prompt caching settings", () => {
  it("keys a fighter by a hash of its id: stable, short, not the id", () => {
    const key = promptCacheKey("f_123");
    expect(key).toBe(promptCacheKey("f_123"));
    expect(key).not.toBe(promptCacheKey("f_124"));
    expect(key).not.toContain("f_123");
    expect(key.length).toBeLessThanOrEqual(64);
  });

  it("is on by default, and off for a provider with prompt_cache = false", () => {
    const keyFor = createPromptCaching(
      providers({ anthropic: { prompt_cache: false } }),
      new Set(["anthropic", "openai"]),
    );
    expect(keyFor("f_1", "openai")).toBe(promptCacheKey("f_1"));
    expect(keyFor("f_1", "anthropic")).toBeUndefined();
  });

  it("refuses a table for a provider nobody installed, naming it", () => {
    expect(() =>
      createPromptCaching(providers({ antropic: { prompt_cache: false } }), new Set(["anthropic"])),
    ).toThrow(/\[providers\.antropic\] names no installed provider/);
  });
});
