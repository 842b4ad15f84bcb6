/**
 * The `openai` provider and `openai_compatible` (any server speaking chat completions at `base_url`).
 * One driver, hence one SDK client and its connection pool, per distinct (provider, base URL, key
 * variable), so fighters on the same account share it whatever their model.
 */
import type { LlmDriver, ModelSettings } from "../../kernel/sdk.js";
import { definePlugin } from "../../kernel/sdk.js";
import { createOpenAiDriver, type OpenAiDriverOptions } from "./driver.js";

const PROVIDERS: Record<string, OpenAiDriverOptions> = {
  openai: { provider: "openai" },
  // A local server usually checks no key; one named by api_key_env is required, as for openai.
  openai_compatible: { provider: "openai_compatible", keyOptional: true },
};

export default definePlugin({
  id: "provider-openai",
  apply(api) {
    const drivers = new Map<string, LlmDriver>();
    api.hooks.provider.resolve.tap((settings: ModelSettings) => {
      const options = PROVIDERS[settings.provider];
      if (!options) return undefined;
      // The request carries model, max_tokens and temperature; only the connection picks the driver.
      const key = JSON.stringify([settings.provider, settings.base_url ?? "", settings.api_key_env ?? ""]);
      let driver = drivers.get(key);
      if (!driver) {
        driver = createOpenAiDriver(settings, process.env, { ...options, home: api.home });
        drivers.set(key, driver);
      }
      return driver;
    });
  },
});
