import { discoverPlugins, pluginRoots } from "../../kernel/host/plugin-manifest.js";
import { createRing } from "../../kernel/ring.js";
import { createLogger } from "../../lib/logger.js";
import { createProviderPolicy, resolveCredential } from "../../lib/provider-keys.js";
import type { SparConfig } from "../../sdk/config.js";
import { isSparError } from "../../sdk/errors.js";
import type { ModelSettings, ProviderDeclaration } from "../../sdk/types.js";
import { KERNEL_VERSION } from "../../sdk/version.js";

export interface ProviderReport {
  provider: string;
  model: string;
  base_url?: string;
  /** Where the setting comes from: "default_model", "model_routing.cheap", "fighter coder" … */
  used_by: string[];
  /** The variables that may hold the key and which one is set; never the key itself. */
  key: { names: string[]; present?: string };
  reachable: boolean;
  detail: string;
}

const PROBE_TIMEOUT_MS = 10_000;

/** The model settings the config names, each with where it comes from. */
export function configuredModels(config: SparConfig): { settings: ModelSettings; used_by: string }[] {
  const out = [{ settings: config.default_model, used_by: "default_model" }];
  for (const tier of ["cheap", "mid", "expensive"] as const) {
    const settings = config.model_routing[tier];
    if (settings && config.model_routing.enabled) out.push({ settings, used_by: `model_routing.${tier}` });
  }
  // The embedding model is probed like the others: its key, its endpoint, a cheap authenticated call.
  const embeddings = config.memory.embeddings;
  if (embeddings) {
    const { provider, model, base_url, api_key_env } = embeddings;
    const settings = {
      provider,
      model,
      ...(base_url ? { base_url } : {}),
      ...(api_key_env ? { api_key_env } : {}),
    };
    out.push({ settings, used_by: "memory.embeddings" });
  }
  return out;
}

/**
 * Checks each distinct provider connection: declared by an installed plugin, key present, and a
 * cheap authenticated request (the driver's `probe`) answered. Imports only the provider plugins
 * it needs, in this process; needs no running daemon.
 */
export async function checkProviders(
  home: string,
  config: SparConfig,
  models: { settings: ModelSettings; used_by: string }[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<ProviderReport[]> {
  const plugins = discoverPlugins(pluginRoots(home, config.plugins.dirs), KERNEL_VERSION);
  const ring = createRing({
    config,
    home,
    env,
    version: KERNEL_VERSION,
    plugins,
    log: createLogger(() => undefined),
  });
  const declarations = new Map<string, ProviderDeclaration>(
    ring.host.eligible.flatMap((p) =>
      (p.manifest.contributes?.providers ?? []).map((d) => [d.id, d] as const),
    ),
  );
  const policy = createProviderPolicy(config, declarations, home);
  const reports = new Map<string, ProviderReport>();
  for (const { settings, used_by } of models) {
    const id = JSON.stringify([
      settings.provider,
      settings.model,
      settings.base_url ?? "",
      settings.api_key_env ?? "",
    ]);
    const existing = reports.get(id);
    if (existing) {
      existing.used_by.push(used_by);
      continue;
    }
    // The same rule as a message: a key goes only where the operator paired it, or nowhere.
    const check = resolveCredential(settings, policy, env);
    const report: ProviderReport = {
      provider: settings.provider,
      model: settings.model,
      ...(settings.base_url ? { base_url: settings.base_url } : {}),
      used_by: [used_by],
      key: {
        names: check.names,
        ...(check.ok && check.credential.key_env ? { present: check.credential.key_env } : {}),
      },
      reachable: false,
      detail: "",
    };
    reports.set(id, report);
    if (!check.ok) {
      report.detail = check.problem;
      continue;
    }
    try {
      await ring.host.activate(`onProvider:${settings.provider}`);
      const driver = await ring.hooks.provider.resolve.promise(settings, check.credential);
      if (!driver) throw new Error("no active plugin answered for this provider");
      report.detail = await driver.probe(AbortSignal.timeout(PROBE_TIMEOUT_MS));
      report.reachable = true;
    } catch (err) {
      report.detail = isSparError(err) || err instanceof Error ? err.message : String(err);
    }
  }
  return [...reports.values()];
}
