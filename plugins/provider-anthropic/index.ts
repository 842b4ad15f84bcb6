/** The `anthropic` provider, on the official SDK. */
import { definePlugin, driverCache } from "../../sdk/index.js";
import { createAnthropicDriver } from "./driver.js";

export default definePlugin({
  id: "provider-anthropic",
  apply(api) {
    const driverFor = driverCache((settings, env) =>
      createAnthropicDriver(settings, env, { home: api.home }),
    );
    api.hooks.provider.resolve.tap((settings, credential) =>
      settings.provider === "anthropic" ? driverFor(settings, credential) : undefined,
    );
  },
});
