import { channelServices } from "../lib/channels/services.js";
import { callerRefusal } from "../lib/fighter-chain.js";
import { DEFAULT_FIGHTER_NAME, fighterTemplate } from "../lib/fighter-files.js";
import { createGrantVetting } from "../lib/grant-vetting.js";
import { createKeyRing } from "../lib/keys.js";
import { createPriceBook } from "../lib/pricing.js";
import { createPromptCaching } from "../lib/prompt-cache.js";
import { createProviderPolicy, resolveCredential } from "../lib/provider-keys.js";
import { createContextPreview } from "../lib/turn-context.js";
import { createUsageMeter } from "../lib/usage-meter.js";
import type { SparConfig } from "../sdk/config.js";
import { isSparError, SparError } from "../sdk/errors.js";
import type { EventBus } from "../sdk/events.js";
import type { RingHooks } from "../sdk/hooks.js";
import type { Logger } from "../sdk/index.js";
import { CAPABILITY_TYPES } from "../sdk/schemas.js";
import type { MoveListing, RingServices } from "../sdk/services.js";
import type { Store } from "../sdk/store-types.js";
import type { ModelSettings, ProviderDeclaration } from "../sdk/types.js";
import { createBusSlot } from "./bus.js";
import { matchGrants } from "./fighters/fighter-manifest.js";
import { createFighterRegistry } from "./fighters/fighter-registry.js";
import { fighterServices } from "./fighters/fighter-services.js";
import { createHooks } from "./hooks.js";
import { createPluginHost, type PluginHost } from "./host/plugin-host.js";
import type { DiscoveredPlugin } from "./host/plugin-manifest.js";
import { phaseStage } from "./host/tap-rules.js";
import { storeServices } from "./store-services.js";
import { createTunnelService } from "./tunnel-service.js";
import { contextWindows } from "./turns/compaction.js";
import { createMessagePath } from "./turns/message-path.js";

/** Idempotency keys older than a day are forgotten this often. */
const PURGE_INTERVAL_MS = 60 * 60 * 1000;

export interface RingOptions {
  config: SparConfig;
  home: string;
  /** The daemon's environment (withDotEnv): keys are read from it, never from process.env. */
  env: Readonly<NodeJS.ProcessEnv>;
  version: string;
  plugins: DiscoveredPlugin[];
  log: Logger;
}

export interface Ring {
  readonly hooks: RingHooks;
  readonly events: EventBus;
  readonly services: RingServices;
  readonly host: PluginHost;
  /** Opens the store through the store plugin and loads the fighter registry from it. */
  open(masterSecret: Buffer): Promise<void>;
  /** Spawns the default fighter when it is missing. */
  ensureDefaultFighter(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Creates the Ring: the coordinator that owns the fighter registry, the event bus and the plugin
 * host, and runs the message data path of DESIGN §4.
 */
export function createRing(options: RingOptions): Ring {
  const { config, log } = options;
  const hooks = createHooks();
  const busSlot = createBusSlot(hooks, log);
  const { events } = busSlot;
  events.subscribe((event) => {
    hooks.events.published
      .promise(event)
      .catch((err: unknown) => log.error("events.published tap failed", { error: String(err) }));
  });
  const startedAt = new Date();
  const keyRing = createKeyRing(options.home);
  let store: Store | undefined;
  let purgeTimer: NodeJS.Timeout | undefined;

  const host = createPluginHost({
    plugins: options.plugins,
    hooks,
    config,
    home: options.home,
    env: options.env,
    kernelVersion: options.version,
    log,
    events,
    services: () => services,
    collections: () => requireStore().collections,
  });

  /** Platforms with a `[channels.<id>]` table in config.toml: their plugins are activated at start. */
  const configuredChannels = Object.keys(config.sections)
    .filter((path) => /^channels\.[^.]+$/.test(path))
    .map((path) => path.slice("channels.".length));

  const declaredMoves = new Map<string, MoveListing>();
  for (const p of host.eligible) {
    for (const move of p.manifest.contributes?.moves ?? [])
      declaredMoves.set(move.name, { ...move, plugin: p.manifest.id });
  }

  // The kernel's own tap: a move runs only when the fighter holds a grant its declaration matches,
  // and so does every fighter waiting on the turn (callers.ts).
  hooks.move.beforeCall.tapPromise({ name: "ring", stage: phaseStage("first") }, async (info) =>
    matchGrants(info.fighter.manifest.capabilities ?? [], info).length > 0
      ? callerRefusal(info)
      : {
          code: "CAPABILITY_DENIED",
          message: `${info.call.name} needs the "${info.capability}" capability${info.server ? ` for server "${info.server}"` : ""}, which this fighter does not hold`,
        },
  );
  const capabilities = new Set<string>([
    ...CAPABILITY_TYPES,
    ...[...declaredMoves.values()].map((m) => m.capability),
  ]);

  function requireStore(): Store {
    if (!store) throw new SparError("STORE_FAILED", "the store is not open");
    return store;
  }
  const providers = new Map<string, ProviderDeclaration>(
    host.eligible.flatMap((p) => (p.manifest.contributes?.providers ?? []).map((d) => [d.id, d] as const)),
  );
  const policy = createProviderPolicy(config, providers, options.home);
  const credentialFor = (settings: ModelSettings) => resolveCredential(settings, policy, options.env);
  const fighters = createFighterRegistry({
    events,
    store: requireStore,
    defaultModel: config.default_model,
    modelProblem: (settings) => {
      const check = credentialFor(settings);
      return check.ok ? undefined : check.problem;
    },
    capabilities,
    vetGrants: createGrantVetting({
      moves: declaredMoves,
      activate: (event) => host.activate(event),
      hooks,
      matchGrants,
    }),
  });

  const prices = createPriceBook(providers, config.pricing);
  const cacheKeyFor = createPromptCaching(config, providers);
  const path = createMessagePath({
    config,
    home: options.home,
    hooks,
    events,
    host,
    log,
    store: requireStore,
    bus: busSlot.bus,
    fighters,
    declaredMoves,
    credentialFor,
    contextWindow: contextWindows(providers),
    meter: createUsageMeter({ prices, store: requireStore, log, hooks }),
    cacheKeyFor,
  });
  const preview = createContextPreview({
    hooks,
    store: requireStore,
    declaredMoves,
    defaultModel: config.default_model,
    cacheKeyFor,
    prices,
  });

  // A killed fighter's running turn is cancelled, whichever daemon of a cluster killed it.
  events.subscribe((event) => {
    if (event.kind === "fighter.killed") path.killed(event.fighter_id);
  });

  const services: RingServices = {
    version: options.version,
    startedAt,
    get clustered() {
      return busSlot.shared;
    },
    ...storeServices(requireStore),
    fighters: fighterServices(fighters, path, requireStore, preview),
    usage: {
      report: async (request) =>
        (await import("../lib/usage-report.js")).usageReport(request, {
          store: requireStore(),
          fighterId: async (idOrName) => (await fighters.lookup(idOrName)).row.id,
        }),
    },
    channels: channelServices(configuredChannels, async (platform) => {
      await host.activate(`onChannel:${platform}`);
      return hooks.channel.resolve.promise(platform);
    }),
    tunnel: createTunnelService(config, host, hooks),
    strategies: {
      names: () => host.eligible.flatMap((p) => p.manifest.contributes?.strategies ?? []),
      async resolve(name) {
        await host.activate(`onStrategy:${name}`);
        return hooks.strategy.resolve.promise(name);
      },
    },
    llm: path.llm,
    moves: {
      list: async () => {
        // Run-time moves of active plugins only: listing imports no plugin code.
        const dynamic = await hooks.move.list.promise([], {});
        return [...declaredMoves.values(), ...dynamic.filter((m) => !declaredMoves.has(m.name))];
      },
      skills: () => hooks.move.skills.promise([]),
      mounts: (fighter) => hooks.move.mounts.promise([], { fighter }),
    },
    auth: {
      key: async (keyId) => keyRing.get(keyId),
      keyCount: async () => keyRing.size(),
      claimNonce: (keyId, nonce, expiresAt) =>
        requireStore().nonces.claim(keyId, nonce, expiresAt, Math.floor(Date.now() / 1000)),
    },
    spend: { counters: () => busSlot.bus().budgets, spent: (filter) => requireStore().usage.spent(filter) },
    plugins: {
      list: async () =>
        host.eligible.map((p) => ({
          id: p.manifest.id,
          kind: p.manifest.kind,
          version: p.manifest.version,
          description: p.manifest.description,
          source: p.source,
          active: host.isActive(p.manifest.id),
          dir: p.dir,
        })),
      manifest: async (id) => host.manifestFor(id),
    },
  };

  return {
    hooks,
    events,
    services,
    host,
    async open(masterSecret) {
      // The store's key derivation (Argon2id, on the thread pool) runs while the bus opens and the
      // other start-up plugins are imported and applied on the main thread.
      const busOpen = host
        .activatePlugin(config.plugins.bus)
        .then(() => busSlot.open(config.plugins.bus, config.quotas.window_s));
      await host.activatePlugin(config.plugins.store);
      const opening = hooks.store.open.promise({ home: options.home, masterSecret });
      const others = Promise.all([
        host.activate("onStartup"),
        ...configuredChannels.map((platform) => host.activate(`onChannel:${platform}`)),
      ]);
      const [opened] = await Promise.all([opening, others, busOpen]);
      if (!opened)
        throw new SparError("STORE_FAILED", `the store plugin ${config.plugins.store} did not open a store`);
      store = opened;
      // Turns a stopped daemon left running end as failed; a retry with their key gets that reply.
      // On a shared bus they may be another node's: each fighter's next lease holder does it.
      if (!busSlot.shared) {
        const abandoned = await opened.turns.abandon({
          code: "INTERRUPTED",
          message: "the daemon stopped before this turn ended; its steps so far are kept",
        });
        if (abandoned > 0) log.warn("turns interrupted by the last stop marked failed", { turns: abandoned });
      }
      fighters.load(await opened.fighters.list());
      await path.purgeIdempotency();
      purgeTimer = setInterval(() => {
        path
          .purgeIdempotency()
          .catch((err: unknown) => log.warn("idempotency purge failed", { error: String(err) }));
      }, PURGE_INTERVAL_MS);
      purgeTimer.unref();
    },
    async ensureDefaultFighter() {
      if (fighters.all().some((f) => f.row.name === DEFAULT_FIGHTER_NAME)) return;
      try {
        await fighters.spawn({ manifest: fighterTemplate(DEFAULT_FIGHTER_NAME) });
      } catch (err) {
        // Another daemon sharing the store spawned it a moment ago.
        if (!isSparError(err, "CONFLICT")) throw err;
        await fighters.lookup(DEFAULT_FIGHTER_NAME);
      }
    },
    async close() {
      clearInterval(purgeTimer);
      // Running turns are cancelled and recorded first, so no client waits on the Arena's close.
      const stopped = path.stop();
      await hooks.daemon.close.promise();
      await stopped;
      await store?.close();
      store = undefined;
      await busSlot.close();
    },
  };
}
