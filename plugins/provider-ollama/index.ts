/**
 * The `ollama` provider: one driver per distinct (host, key variable) pair, so fighters on the same
 * runner share it whatever their model. Each call opens its own client (see connection.ts), so the
 * driver holds no connection state of its own.
 */
import type { LlmDriver } from "../../kernel/sdk.js";
import { definePlugin } from "../../kernel/sdk.js";
import { createOllamaDriver } from "./driver.js";

export default definePlugin({
  id: "provider-ollama",
  apply(api) {
    const drivers = new Map<string, LlmDriver>();
    api.hooks.provider.resolve.tap((settings) => {
      if (settings.provider !== "ollama") return undefined;
      // The request carries model, max_tokens and temperature; only the connection picks the driver.
      const key = JSON.stringify([settings.base_url ?? "", settings.api_key_env ?? ""]);
      let driver = drivers.get(key);
      if (!driver) {
        driver = createOllamaDriver(settings);
        drivers.set(key, driver);
      }
      return driver;
    });
  },
});
