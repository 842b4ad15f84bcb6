/**
 * The `google` provider, on `@google/genai`. A driver also remembers the thought signatures of the
 * calls it returned, which the cache keeps per connection.
 */
import { definePlugin, driverCache } from "../../sdk/index.js";
import { createGoogleDriver } from "./driver.js";

export default definePlugin({
  id: "provider-google",
  apply(api) {
    const driverFor = driverCache((settings, env) => createGoogleDriver(settings, env, { home: api.home }));
    api.hooks.provider.resolve.tap((settings, credential) =>
      settings.provider === "google" ? driverFor(settings, credential) : undefined,
    );
  },
});
