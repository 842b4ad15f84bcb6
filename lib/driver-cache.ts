import type { LlmDriver, ModelSettings, ProviderCredential } from "../sdk/types.js";

/** The variables a driver may read: only the key the kernel chose for its connection, if any. */
export type CredentialEnv = Readonly<Record<string, string>>;

/**
 * One driver per connection (provider, `base_url`, key variable): each request carries its own
 * model, max_tokens and temperature, so fighters on the same account share a driver, and its SDK
 * client and connection pool, whatever their model.
 *
 * `create` gets the settings with `api_key_env` set to the variable the kernel allowed (or unset) and
 * an `env` holding that one variable, so a driver that reads `env[settings.api_key_env ?? DEFAULT]`
 * can never send any other variable, wherever a fighter's manifest points it.
 *
 * @example
 * const driverFor = driverCache((settings, env) => createMyDriver(settings, env));
 * hooks.provider.resolve.tap((s, credential) => (s.provider === "mine" ? driverFor(s, credential) : undefined));
 */
export function driverCache(
  create: (settings: ModelSettings, env: CredentialEnv) => LlmDriver,
): (settings: ModelSettings, credential: ProviderCredential) => LlmDriver {
  const drivers = new Map<string, LlmDriver>();
  return (settings, credential) => {
    const key = JSON.stringify([settings.provider, settings.base_url ?? "", credential.key_env ?? ""]);
    let driver = drivers.get(key);
    if (!driver) {
      const { key_env, api_key } = credential;
      const env: CredentialEnv = key_env && api_key ? { [key_env]: api_key } : {};
      const scoped: ModelSettings = { ...settings };
      if (key_env) scoped.api_key_env = key_env;
      else delete scoped.api_key_env;
      driver = create(scoped, env);
      drivers.set(key, driver);
    }
    return driver;
  };
}
