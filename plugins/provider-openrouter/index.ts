/**
 * OpenRouter speaks OpenAI's chat-completions protocol, so this plugin reuses provider-openai's driver
 * (declared in `requires`) with OpenRouter's base URL, key variable and attribution headers. Model
 * names are OpenRouter's `vendor/model` ids (e.g. `anthropic/claude-3.5-haiku`).
 */
import type { LlmDriver } from "../../kernel/sdk.js";
import { definePlugin } from "../../kernel/sdk.js";
import { createOpenAiDriver } from "../provider-openai/driver.js";

export const OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1";

export default definePlugin({
  id: "provider-openrouter",
  apply(api) {
    const drivers = new Map<string, LlmDriver>();
    api.hooks.provider.resolve.tap((settings) => {
      if (settings.provider !== "openrouter") return undefined;
      const key = JSON.stringify([settings.base_url ?? "", settings.api_key_env ?? ""]);
      let driver = drivers.get(key);
      if (!driver) {
        driver = createOpenAiDriver(settings, process.env, {
          provider: "openrouter",
          defaultBaseUrl: OPENROUTER_BASE_URL,
          defaultKeyEnv: "OPENROUTER_API_KEY",
          home: api.home,
          // OpenRouter's optional attribution: who is calling, shown on its activity page.
          defaultHeaders: { "X-Title": "Spar", "HTTP-Referer": "https://github.com/spar-dev/spar" },
        });
        drivers.set(key, driver);
      }
      return driver;
    });
  },
});
