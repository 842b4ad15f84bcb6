import { join } from "node:path";
import type { ModelSettings, ProviderDeclaration } from "./types.js";

/**
 * What stops a model setting from working before any request is made: an unknown provider, a
 * missing `base_url` where the provider needs one, or a missing key. Names the variable, never a value.
 */
export function providerProblem(
  settings: ModelSettings,
  declarations: ReadonlyMap<string, ProviderDeclaration>,
  home: string,
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  const declared = declarations.get(settings.provider);
  if (!declared) {
    const known = [...declarations.keys()].sort().join(", ");
    return `unknown provider "${settings.provider}" (installed: ${known || "none"})`;
  }
  if (declared.requires_base_url && !settings.base_url) {
    return `the ${settings.provider} provider needs base_url (the server's URL, e.g. http://127.0.0.1:8080/v1)`;
  }
  const candidates = settings.api_key_env ? [settings.api_key_env] : (declared.key_env ?? []);
  if (candidates.length > 0 && !candidates.some((name) => env[name])) {
    return (
      `the ${settings.provider} provider needs an API key: set ${candidates.join(" or ")} in the ` +
      `environment or in ${join(home, ".env")}`
    );
  }
  return undefined;
}

/** Which variable holds the key for `settings`, if one is set; for reports that must not show it. */
export function keyVariable(
  settings: ModelSettings,
  declared: ProviderDeclaration | undefined,
  env: NodeJS.ProcessEnv = process.env,
): { names: string[]; present?: string } {
  const names = settings.api_key_env ? [settings.api_key_env] : (declared?.key_env ?? []);
  return { names, present: names.find((name) => env[name]) };
}
