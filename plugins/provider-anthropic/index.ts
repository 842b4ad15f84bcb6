/**
 * The `anthropic` provider: one driver, hence one SDK client and its connection pool, per distinct
 * (base URL, key variable) pair, so fighters on the same account share it whatever their model.
 */
import type { LlmDriver } from "../../kernel/sdk.js";
import { definePlugin } from "../../kernel/sdk.js";
import { createAnthropicDriver } from "./driver.js";

export default definePlugin({
  id: "provider-anthropic",
  apply(api) {
    const drivers = new Map<string, LlmDriver>();
    api.hooks.provider.resolve.tap((settings) => {
      if (settings.provider !== "anthropic") return undefined;
      // The request carries model, max_tokens and temperature; only the connection picks the driver.
      const key = JSON.stringify([settings.base_url ?? "", settings.api_key_env ?? "ANTHROPIC_API_KEY"]);
      let driver = drivers.get(key);
      if (!driver) {
        driver = createAnthropicDriver(settings, process.env, { home: api.home });
        drivers.set(key, driver);
      }
      return driver;
    });
  },
});
