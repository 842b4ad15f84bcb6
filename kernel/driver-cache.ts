import type { LlmDriver, ModelSettings } from "./types.js";

/**
 * One driver per connection (provider, `base_url`, `api_key_env`): each request carries its own
 * model, max_tokens and temperature, so fighters on the same account share a driver, and its SDK
 * client and connection pool, whatever their model.
 *
 * @example
 * const driverFor = driverCache((settings) => createMyDriver(settings));
 * hooks.provider.resolve.tap((s) => (s.provider === "mine" ? driverFor(s) : undefined));
 */
export function driverCache(
  create: (settings: ModelSettings) => LlmDriver,
): (settings: ModelSettings) => LlmDriver {
  const drivers = new Map<string, LlmDriver>();
  return (settings) => {
    const key = JSON.stringify([settings.provider, settings.base_url ?? "", settings.api_key_env ?? ""]);
    let driver = drivers.get(key);
    if (!driver) {
      driver = create(settings);
      drivers.set(key, driver);
    }
    return driver;
  };
}
