/**
 * The `ollama` provider (the local runner). Each call opens its own client (see connection.ts), so a
 * driver holds no connection state of its own.
 */
import { definePlugin, driverCache } from "../../sdk/index.js";
import { createOllamaDriver } from "./driver.js";

export default definePlugin({
  id: "provider-ollama",
  apply(api) {
    const driverFor = driverCache((settings, env) => createOllamaDriver(settings, { env }));
    api.hooks.provider.resolve.tap((settings, credential) =>
      settings.provider === "ollama" ? driverFor(settings, credential) : undefined,
    );
  },
});
