/**
 * OpenRouter speaks OpenAI's chat-completions protocol, so this plugin reuses provider-openai's driver
 * (declared in `requires`) with OpenRouter's base URL, key variable and attribution header. Model
 * names are OpenRouter's `vendor/model` ids (e.g. `anthropic/claude-3.5-haiku`).
 */
import { definePlugin, driverCache } from "../../kernel/sdk.js";
import { createOpenAiDriver } from "../provider-openai/driver.js";

export const OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1";

export default definePlugin({
  id: "provider-openrouter",
  apply(api) {
    const driverFor = driverCache((settings, env) =>
      createOpenAiDriver(settings, env, {
        provider: "openrouter",
        defaultBaseUrl: OPENROUTER_BASE_URL,
        defaultKeyEnv: "OPENROUTER_API_KEY",
        home: api.home,
        // OpenRouter's optional attribution: the app's name on its activity page.
        defaultHeaders: { "X-Title": "Spar" },
      }),
    );
    api.hooks.provider.resolve.tap((settings, credential) =>
      settings.provider === "openrouter" ? driverFor(settings, credential) : undefined,
    );
  },
});
