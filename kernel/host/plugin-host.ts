import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { checkPluginChoices } from "../../lib/plugin-choices.js";
import { eligiblePlugins } from "../../lib/plugin-state.js";
import { withDeadline } from "../../sdk/cancel.js";
import { checkNamespaces } from "../../sdk/collection-checks.js";
import { createPluginData } from "../../sdk/collection-engine.js";
import type { CollectionStore } from "../../sdk/collections.js";
import type { SparConfig } from "../../sdk/config.js";
import { SparError, wrapPluginError } from "../../sdk/errors.js";
import type { EventBus } from "../../sdk/events.js";
import type { RingHooks } from "../../sdk/hooks.js";
import type { Logger, PluginApi, PluginHooks, SparPlugin, TapOptions } from "../../sdk/index.js";
import type { PluginManifest } from "../../sdk/plugin-manifest.js";
import { scopeEvents, scopeLog } from "../../sdk/plugin-scope.js";
import { validatorWithDefaults } from "../../sdk/schema.js";
import type { RingServices } from "../../sdk/services.js";
import { checkSections } from "./config-sections.js";
import type { DiscoveredPlugin } from "./plugin-manifest.js";
import { reorder, type TapRouting, tapOptions, tapRouting } from "./tap-rules.js";

export interface PluginHostOptions {
  plugins: DiscoveredPlugin[];
  hooks: RingHooks;
  config: SparConfig;
  home: string;
  /** Handed to every plugin as `PluginApi.env`. */
  env: Readonly<NodeJS.ProcessEnv>;
  kernelVersion: string;
  log: Logger;
  events: EventBus;
  services: () => RingServices;
  /** The open store's collections, behind every plugin's `api.data`. */
  collections: () => CollectionStore;
  /** Per-plugin limit for import + apply. */
  activationTimeoutMs?: number;
}

export interface PluginHost {
  /** Plugins that may be activated: enabled, and the chosen one for single-slot kinds. */
  readonly eligible: readonly DiscoveredPlugin[];
  /** Activates every eligible plugin whose manifest lists `event`; resolves when all applied. */
  activate(event: string): Promise<void>;
  /** Activates one eligible plugin (and what it requires) by id. */
  activatePlugin(id: string): Promise<void>;
  isActive(id: string): boolean;
  manifestFor(id: string): PluginManifest | undefined;
}

/**
 * Decides which discovered plugins may run, then imports and applies each lazily, the first time
 * one of its activation events fires. Config tables are checked against the plugins that own them
 * here, before any plugin code is imported.
 */
export function createPluginHost(options: PluginHostOptions): PluginHost {
  const { config, hooks } = options;
  const timeoutMs = options.activationTimeoutMs ?? 10_000;
  const byId = new Map(options.plugins.map((p) => [p.manifest.id, p]));
  config.sections = checkSections(config, options.plugins, join(options.home, "config.toml"));

  checkPluginChoices(
    config.plugins,
    options.plugins.map((p) => p.manifest),
  );
  const eligible = eligiblePlugins(options.plugins, config.plugins);

  const routing = tapRouting(eligible.map((p) => p.manifest));
  checkNamespaces(eligible.map((p) => ({ id: p.manifest.id, source: p.source, data: p.manifest.data })));

  const activations = new Map<string, Promise<void>>();

  function activateOne(plugin: DiscoveredPlugin, chain: string[]): Promise<void> {
    const id = plugin.manifest.id;
    if (chain.includes(id)) {
      return Promise.reject(
        new SparError("PLUGIN_INVALID", `plugin dependency cycle: ${[...chain, id].join(" -> ")}`),
      );
    }
    let pending = activations.get(id);
    if (!pending) {
      pending = (async () => {
        for (const dep of plugin.manifest.requires ?? []) {
          const depPlugin = byId.get(dep);
          if (depPlugin) await activateOne(depPlugin, [...chain, id]);
        }
        await withDeadline(
          load(plugin),
          timeoutMs,
          () =>
            new SparError("PLUGIN_FAILED", `plugin ${id} did not activate within ${timeoutMs} ms`, {
              plugin: id,
            }),
        );
      })();
      activations.set(id, pending);
    }
    return pending;
  }

  async function load(plugin: DiscoveredPlugin): Promise<void> {
    const { manifest, dir } = plugin;
    // A skill pack has no code: activating it is only marking it active.
    if (manifest.entry === undefined) return;
    let mod: { default?: SparPlugin };
    try {
      mod = (await import(pathToFileURL(join(dir, manifest.entry)).href)) as { default?: SparPlugin };
    } catch (err) {
      throw wrapPluginError(manifest.id, "import", err);
    }
    const plugin_ = mod.default;
    if (!plugin_ || typeof plugin_.apply !== "function" || plugin_.id !== manifest.id) {
      throw new SparError(
        "PLUGIN_INVALID",
        `plugin ${manifest.id}: ${manifest.entry} must default-export definePlugin({ id: "${manifest.id}", apply })`,
      );
    }
    // Its own tables only; one config.toml leaves out (such as [moves.shell]) still gets its defaults.
    const sections = Object.fromEntries(
      Object.entries(manifest.sections ?? {}).map(([path, schema]) => {
        const table = config.sections[path] ?? {};
        validatorWithDefaults(schema)(table);
        return [path, table];
      }),
    );
    const api: PluginApi = {
      id: manifest.id,
      hooks: scopeHooks(hooks, manifest.id, routing),
      ring: options.services(),
      events: scopeEvents(options.events, manifest.id, manifest.contributes?.events),
      config: { ...config, sections },
      home: options.home,
      env: options.env,
      dir,
      kernelVersion: options.kernelVersion,
      log: scopeLog(options.log, manifest.id),
      data: createPluginData({
        plugin: manifest.id,
        data: manifest.data ?? { collections: {} },
        store: options.collections,
      }),
    };
    try {
      await plugin_.apply(api, sections);
    } catch (err) {
      throw wrapPluginError(manifest.id, "apply", err);
    }
  }

  return {
    eligible,
    async activate(event) {
      const matching = eligible.filter((p) => p.manifest.activation?.includes(event));
      await Promise.all(matching.map((p) => activateOne(p, [])));
    },
    activatePlugin(id) {
      const plugin = eligible.find((p) => p.manifest.id === id);
      if (!plugin)
        return Promise.reject(
          new SparError("PLUGIN_INVALID", `plugin ${id} is not installed or not enabled`),
        );
      return activateOne(plugin, []);
    },
    isActive: (id) => activations.has(id),
    manifestFor: (id) => byId.get(id)?.manifest,
  };
}

/**
 * Wraps every hook so that a plugin's taps carry its id as their name, run in declared order
 * (tap-rules.ts), are asked only for the names the plugin contributes (routed bail hooks), and any
 * error escaping them is rethrown with the plugin id and the hook's path (e.g. "provider.resolve").
 */
export function scopeHooks(hooks: RingHooks, pluginId: string, routing: TapRouting): PluginHooks {
  const scoped: Record<string, Record<string, unknown>> = {};
  for (const [group, members] of Object.entries(hooks)) {
    const groupScoped: Record<string, unknown> = {};
    for (const [name, hook] of Object.entries(members as Record<string, TappableHook>)) {
      const path = `${group}.${name}`;
      groupScoped[name] = Object.freeze({
        tap(fn: (...args: unknown[]) => unknown, options?: TapOptions) {
          if (path === "move.list") routing.offersMoves(pluginId);
          hook.tapPromise(tapOptions(pluginId, options), async (...args: unknown[]) => {
            if (!routing.asks(path, pluginId, args)) return undefined;
            try {
              return await fn(...args);
            } catch (err) {
              throw wrapPluginError(pluginId, path, err);
            }
          });
          reorder(hook);
        },
      });
    }
    scoped[group] = Object.freeze(groupScoped);
  }
  return Object.freeze(scoped) as unknown as PluginHooks;
}

type TappableHook = Parameters<typeof reorder>[0] & {
  tapPromise(options: ReturnType<typeof tapOptions>, fn: (...args: unknown[]) => Promise<unknown>): void;
};
