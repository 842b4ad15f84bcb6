/** The `openai` provider and `openai_compatible` (any server speaking chat completions at `base_url`). */
import { definePlugin, driverCache } from "../../kernel/sdk.js";
import { createOpenAiDriver, type OpenAiDriverOptions } from "./driver.js";

const PROVIDERS: Record<string, OpenAiDriverOptions> = {
  openai: { provider: "openai" },
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
