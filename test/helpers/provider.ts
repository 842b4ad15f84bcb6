import {
  isSparError,
  type LlmRequest,
  type ModelSettings,
  type PluginApi,
  type PluginHooks,
  type SparError,
  type SparPlugin,
} from "../../sdk/index.js";

/** The rejection of `work`, which must be a SparError (the test fails otherwise). */
export async function failure(work: Promise<unknown>): Promise<SparError> {
  const err = await work.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isSparError(err)) throw new Error(`expected a SparError, got ${String(err)}`);
  return err;
}

export type Resolver = Parameters<PluginHooks["provider"]["resolve"]["tap"]>[0];

/**
 * Applies a provider plugin and returns what it tapped on `provider.resolve`. Its apply touches only
 * that hook and `home`; the rest of PluginApi would be noise here.
 */
export async function providerResolver(plugin: SparPlugin, home = "/srv/spar"): Promise<Resolver> {
  let resolver: Resolver | undefined;
  const tap = (fn: Resolver) => {
    resolver = fn;
  };
  await plugin.apply(
    { id: plugin.id, hooks: { provider: { resolve: { tap } } }, home } as unknown as PluginApi,
    {},
  );
  if (!resolver) throw new Error("the plugin tapped nothing");
  return resolver;
}

/** A one-message request to `model`, as the agent loop would send it; `overrides` replace any part. */
export function chatRequest(model: ModelSettings, overrides: Partial<LlmRequest> = {}): LlmRequest {
  return {
    model,
    system: "You are terse.",
    messages: [{ role: "user", content: "hi" }],
    tools: [],
    ...overrides,
  };
}
