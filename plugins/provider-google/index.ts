/**
 * The `google` provider: one driver, hence one SDK client and its remembered thought signatures, per
 * distinct (base URL, key variable) pair, so fighters on the same account share it whatever their model.
 */
import type { LlmDriver } from "../../kernel/sdk.js";
import { definePlugin } from "../../kernel/sdk.js";
import { createGoogleDriver } from "./driver.js";

export default definePlugin({
  id: "provider-google",
  apply(api) {
    const drivers = new Map<string, LlmDriver>();
    api.hooks.provider.resolve.tap((settings) => {
      if (settings.provider !== "google") return undefined;
      // The request carries model, max_tokens and temperature; only the connection picks the driver.
      const key = JSON.stringify([settings.base_url ?? "", settings.api_key_env ?? ""]);
      let driver = drivers.get(key);
      if (!driver) {
        driver = createGoogleDriver(settings, process.env, { home: api.home });
        drivers.set(key, driver);
      }
      return driver;
    });
  },
});
