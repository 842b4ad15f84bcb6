import { join } from "node:path";
import type { SparConfig } from "../sdk/config.js";
import { SparError } from "../sdk/errors.js";
import type { ModelSettings, ProviderCredential, ProviderDeclaration } from "../sdk/types.js";

/**
 * Where a provider key may go. A key is only ever sent to the endpoint the operator paired it with in
 * config.toml (`default_model`, the routing tiers, `[[providers.endpoints]]`, `[memory.embeddings]`),
 * or to the provider's official endpoint with the provider's own key variables. A fighter manifest may pick among those
 * pairings but never make a new one: it cannot aim a key at a URL of its choosing, name a variable
 * that is not a declared provider key, or reach an unconfigured URL at all unless
 * `[providers] allow_manifest_base_url` lists it (and then no key goes with it). `SPAR_*` variables
 * are never read as keys.
 */

/** One endpoint with the variables whose keys may be sent to it. `endpoint` "" is the official one. */
export interface KeyPairing {
  provider: string;
  endpoint: string;
  key_env: string[];
  /** Where the operator declared it, for messages: "default_model", "providers.endpoints[0]" … */
  from: string;
}

export interface ProviderPolicy {
  readonly declarations: ReadonlyMap<string, ProviderDeclaration>;
  readonly pairings: readonly KeyPairing[];
  /** Normalized base URLs a manifest may name without a pairing (no key is sent to them). */
  readonly allowedBaseUrls: ReadonlySet<string>;
  readonly home: string;
}

/** Why a model setting may not be used: a broken setting, a missing key, or the pairing rule. */
export type CredentialRefusal = "setting" | "missing_key" | "unpaired";

export type CredentialCheck =
  | { ok: true; credential: ProviderCredential; names: string[] }
  | { ok: false; problem: string; names: string[]; kind: CredentialRefusal };

/** Variables the daemon never reads as a provider key, whatever a setting says. */
export function isReservedVariable(name: string): boolean {
  return /^SPAR_/i.test(name);
}

/** `SPAR_*` variables hold Spar's own secrets (the master key): never a provider key, even by config. */
export function refuseReservedKeyVariables(path: string, config: SparConfig): void {
  const named = [
    ["default_model", config.default_model.api_key_env],
    ...(["cheap", "mid", "expensive"] as const).map((t) => [
      `model_routing.${t}`,
      config.model_routing[t]?.api_key_env,
    ]),
    ...config.providers.endpoints.map((e, i) => [`providers.endpoints[${i}]`, e.api_key_env]),
    ["memory.embeddings", config.memory.embeddings?.api_key_env],
  ];
  for (const [where, name] of named) {
    if (name && isReservedVariable(name)) {
      throw new SparError(
        "CONFIG_INVALID",
        `${path}: ${where}.api_key_env = "${name}": SPAR_* variables are Spar's own secrets and are never sent as a provider key`,
        { path: `${where}.api_key_env` },
      );
    }
  }
}

/**
 * A base URL in the form pairings are compared in: scheme and host lower-cased by the URL parser,
 * default port dropped, no trailing slash, no query or fragment. Undefined for what is not a URL.
 */
export function normalizeBaseUrl(url: string): string | undefined {
  const parsed = URL.parse(url);
  if (!parsed || (parsed.protocol !== "http:" && parsed.protocol !== "https:")) return undefined;
  if (parsed.username || parsed.password || parsed.search || parsed.hash) return undefined;
  return `${parsed.origin}${parsed.pathname.replace(/\/+$/, "")}`;
}

export function createProviderPolicy(
  config: SparConfig,
  declarations: ReadonlyMap<string, ProviderDeclaration>,
  home: string,
): ProviderPolicy {
  const pairings: KeyPairing[] = [];
  // Every model setting the operator wrote pairs its endpoint with its key, routing on or off.
  const tiers = (["cheap", "mid", "expensive"] as const).flatMap((tier) => {
    const settings = config.model_routing[tier];
    return settings ? [{ ...settings, from: `model_routing.${tier}` }] : [];
  });
  const declared = [
    { ...config.default_model, from: "default_model" },
    ...tiers,
    ...config.providers.endpoints.map((e, i) => ({ ...e, from: `providers.endpoints[${i}]` })),
    ...(config.memory.embeddings ? [{ ...config.memory.embeddings, from: "memory.embeddings" }] : []),
  ];
  for (const s of declared) {
    pairings.push({
      provider: s.provider,
      endpoint: s.base_url ? (normalizeBaseUrl(s.base_url) ?? s.base_url) : "",
      key_env: s.api_key_env ? [s.api_key_env] : (declarations.get(s.provider)?.key_env ?? []),
      from: s.from,
    });
  }
  for (const d of declarations.values()) {
    if (d.key_env?.length)
      pairings.push({ provider: d.id, endpoint: "", key_env: d.key_env, from: "the provider" });
  }
  const allowed = config.providers.allow_manifest_base_url.map((u) => normalizeBaseUrl(u) ?? u);
  return { declarations, pairings, allowedBaseUrls: new Set(allowed), home };
}

/**
 * Which key (if any) a model setting may send, or why it may not be used at all: an unknown
 * provider, a missing `base_url` where one is needed, a key paired with another endpoint, an
 * unconfigured URL, or a missing key. Names variables, never values.
 */
export function resolveCredential(
  settings: ModelSettings,
  policy: ProviderPolicy,
  env: NodeJS.ProcessEnv = process.env,
): CredentialCheck {
  const refuse = (
    problem: string,
    kind: CredentialRefusal = "unpaired",
    names: string[] = [],
  ): CredentialCheck => ({
    ok: false,
    problem,
    names,
    kind,
  });
  const { provider } = settings;
  const declared = policy.declarations.get(provider);
  if (!declared) {
    const known = [...policy.declarations.keys()].sort().join(", ");
    return refuse(`unknown provider "${provider}" (installed: ${known || "none"})`, "setting");
  }
  if (declared.requires_base_url && !settings.base_url) {
    return refuse(
      `the ${provider} provider needs base_url (the server's URL, e.g. http://127.0.0.1:8080/v1)`,
      "setting",
    );
  }
  if (settings.api_key_env && isReservedVariable(settings.api_key_env)) {
    return refuse(`api_key_env "${settings.api_key_env}": SPAR_* variables are never sent as a provider key`);
  }
  const endpoint = settings.base_url ? normalizeBaseUrl(settings.base_url) : "";
  if (endpoint === undefined)
    return refuse(`base_url "${settings.base_url}" is not a plain http(s) URL`, "setting");
  const where = endpoint || `${provider}'s official endpoint`;
  const paired = policy.pairings.filter((p) => p.provider === provider && p.endpoint === endpoint);

  let names: string[];
  if (settings.api_key_env) {
    if (!paired.some((p) => p.key_env.includes(settings.api_key_env as string))) {
      return refuse(
        `api_key_env "${settings.api_key_env}" is not paired with ${where} for the ${provider} provider in ` +
          `${configFile(policy)}; a key is only sent where the operator configured it (see [[providers.endpoints]])`,
      );
    }
    names = [settings.api_key_env];
  } else if (paired[0]) {
    names = paired[0].key_env;
  } else if (endpoint && policy.allowedBaseUrls.has(endpoint)) {
    names = [];
    if (declared.key_env?.length) {
      return refuse(
        `the ${provider} provider needs a key, and no key is sent to ${endpoint}: it is not paired with one ` +
          `in ${configFile(policy)} (add it under [[providers.endpoints]] with its api_key_env)`,
      );
    }
  } else if (endpoint) {
    return refuse(
      `base_url ${endpoint} is not an endpoint configured in ${configFile(policy)} for the ${provider} ` +
        "provider; add it under [[providers.endpoints]], or list it in [providers] allow_manifest_base_url " +
        "to allow it without a key",
    );
  } else {
    names = [];
  }

  if (names.length === 0) return { ok: true, credential: {}, names };
  const present = names.find((name) => !isReservedVariable(name) && env[name]);
  if (!present) {
    return refuse(
      `the ${provider} provider needs an API key: set ${names.join(" or ")} in the environment or in ` +
        join(policy.home, ".env"),
      "missing_key",
      names,
    );
  }
  return { ok: true, credential: { key_env: present, api_key: env[present] as string }, names };
}

function configFile(policy: ProviderPolicy): string {
  return join(policy.home, "config.toml");
}
