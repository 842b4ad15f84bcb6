/**
 * Whether a turn's requests use their provider's prompt cache (README "Prompt caching"), and the
 * fighter's cache key. On for every provider unless `[providers.<name>] prompt_cache = false`; a
 * driver that knows no cache (Ollama, an OpenAI-compatible server) ignores it.
 */
import { createHash } from "node:crypto";
import type { ProviderSettings, SparConfig } from "../sdk/config.js";
import { SparError } from "../sdk/errors.js";

/** The keys of `[providers]` that are not a provider's own table. */
const OWN_KEYS = new Set(["endpoints", "allow_manifest_base_url"]);

/**
 * A fighter's prompt cache key: a hash of its id (never anything secret), the same on every daemon,
 * so a provider routes the fighter's requests to the same cache (OpenAI's `prompt_cache_key`).
 */
export function promptCacheKey(fighterId: string): string {
  return `spar-${createHash("sha256").update(`spar prompt cache\u0000${fighterId}`).digest("base64url").slice(0, 32)}`;
}

/**
 * The cache key for a fighter's call to a provider, or undefined when that provider's cache is off.
 * Refuses at start a `[providers.<name>]` table for a provider no installed plugin declares.
 *
 * @example
 * const cacheKeyFor = createPromptCaching(config, new Set(["anthropic", "openai"]));
 * cacheKeyFor(fighter.id, "anthropic"); // "spar-…", or undefined with prompt_cache = false
 */
export function createPromptCaching(
  config: Pick<SparConfig, "providers">,
  known: { has(provider: string): boolean },
): (fighterId: string, provider: string) => string | undefined {
  const settings = new Map<string, ProviderSettings>();
  for (const [name, value] of Object.entries(config.providers)) {
    if (OWN_KEYS.has(name)) continue;
    if (!known.has(name)) {
      throw new SparError("CONFIG_INVALID", `config.toml: [providers.${name}] names no installed provider`, {
        path: `providers.${name}`,
      });
    }
    settings.set(name, value as ProviderSettings);
  }
  return (fighterId, provider) =>
    settings.get(provider)?.prompt_cache === false ? undefined : promptCacheKey(fighterId);
}
