/**
 * The `openai` provider, `openrouter` (OpenRouter speaks the same protocol, with its own base URL,
 * key variable and attribution header) and `openai_compatible` (any server speaking chat
 * completions at `base_url`): one driver, three sets of defaults.
 */
import { definePlugin, driverCache } from "../../sdk/index.js";
import { createOpenAiDriver, type OpenAiDriverOptions } from "./driver.js";

const PROVIDERS: Record<string, OpenAiDriverOptions> = {
  openai: { provider: "openai", promptCacheKey: true },
  // OpenRouter's optional attribution: the app's name on its activity page.
  openrouter: {
    provider: "openrouter",
    defaultBaseUrl: "https://openrouter.ai/api/v1",
    defaultKeyEnv: "OPENROUTER_API_KEY",
    defaultHeaders: { "X-Title": "Spar" },
    promptCacheKey: true,
  },
  // A local server usually checks no key; one named by api_key_env is required, as for openai.
  openai_compatible: { provider: "openai_compatible", keyOptional: true },
};

export default definePlugin({
  id: "provider-openai",
  apply(api) {
    const driverFor = driverCache((settings, env) =>
      createOpenAiDriver(settings, env, { ...PROVIDERS[settings.provider], home: api.home }),
    );
    api.hooks.provider.resolve.tap((settings, credential) =>
      Object.hasOwn(PROVIDERS, settings.provider) ? driverFor(settings, credential) : undefined,
    );
  },
});
