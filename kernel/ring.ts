import { runTurn } from "./agent-loop.js";
import type { SparConfig } from "./config.js";
import { SparError } from "./errors.js";
import { createEventBus, type EventBus } from "./events.js";
import { DEFAULT_FIGHTER_NAME, FIGHTER_TEMPLATES, hasCapability } from "./fighter-manifest.js";
import { createFighterRegistry, type LiveFighter } from "./fighter-registry.js";
import { createHooks, type RingHooks } from "./hooks.js";
import { createPluginHost, type PluginHost } from "./plugin-host.js";
import type { DiscoveredPlugin } from "./plugin-manifest.js";
import { providerProblem } from "./provider-check.js";
import { providerError } from "./provider-errors.js";
import { routeModel } from "./routing.js";
import type { Logger } from "./sdk.js";
import type { FighterMessageResult, MessageOptions, MoveListing, RingServices } from "./services.js";
import type { LlmDriver, ModelSettings, MoveDeclaration, ProviderDeclaration, Store } from "./types.js";

export interface RingOptions {
  config: SparConfig;
  home: string;
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
  const events = createEventBus({
    historySize: 1000,
    onListenerError: (err, event) =>
      log.error("event listener failed", { kind: event.kind, error: String(err) }),
  });
  events.subscribe((event) => {
    hooks.events.published
      .promise(event)
      .catch((err: unknown) => log.error("events.published tap failed", { error: String(err) }));
  });
  const startedAt = new Date();
  let store: Store | undefined;

  const host = createPluginHost({
    plugins: options.plugins,
    hooks,
    config,
    home: options.home,
    kernelVersion: options.version,
    log,
    events,
    services: () => services,
  });

  const declaredMoves = new Map<string, MoveListing>();
  for (const p of host.eligible) {
    for (const move of p.manifest.contributes?.moves ?? [])
      declaredMoves.set(move.name, { ...move, plugin: p.manifest.id });
  }

  // The kernel's own tap: a move runs only when the fighter holds the capability its manifest declares.
  hooks.move.beforeCall.tapPromise({ name: "ring", stage: -100 }, async (info) =>
    hasCapability(info.fighter.manifest.capabilities ?? [], info.capability)
      ? undefined
      : {
          code: "CAPABILITY_DENIED",
          message: `${info.call.name} needs the "${info.capability}" capability, which this fighter does not hold`,
        },
  );

  function requireStore(): Store {
    if (!store) throw new SparError("STORE_FAILED", "the store is not open");
    return store;
  }
  const providers = new Map<string, ProviderDeclaration>(
    host.eligible.flatMap((p) => (p.manifest.contributes?.providers ?? []).map((d) => [d.id, d] as const)),
  );
  const modelProblem = (settings: ModelSettings) => providerProblem(settings, providers, options.home);
  const fighters = createFighterRegistry({
    events,
    store: requireStore,
    defaultModel: config.default_model,
    modelProblem,
  });

  async function resolveDriver(settings: ModelSettings): Promise<LlmDriver> {
    const problem = modelProblem(settings);
    if (problem)
      throw new SparError("PROVIDER_ERROR", problem, { provider: settings.provider, retryable: false });
    await host.activate(`onProvider:${settings.provider}`);
    const driver = await hooks.provider.resolve.promise(settings);
    if (!driver)
      throw providerError(settings.provider, "no active plugin answered for this provider", {
        retryable: false,
      });
    return driver;
  }

  async function message(
    idOrName: string,
    text: string,
    opts: MessageOptions = {},
  ): Promise<FighterMessageResult> {
    const live = fighters.find(idOrName);
    const turn = live.queue.then(() => fight(live, text, opts));
    live.queue = turn.catch(() => undefined);
    return turn;
  }

  async function fight(live: LiveFighter, text: string, opts: MessageOptions): Promise<FighterMessageResult> {
    const db = requireStore();
    if (!fighters.isLive(live))
      throw new SparError("FIGHTER_NOT_FOUND", `fighter "${live.row.name}" was killed`);
    let bout = opts.bout_id ? db.bouts.get(opts.bout_id) : db.bouts.latest(live.row.id);
    if (opts.bout_id && (!bout || bout.fighter_id !== live.row.id)) {
      throw new SparError("BOUT_NOT_FOUND", `fighter "${live.row.name}" has no bout ${opts.bout_id}`);
    }
    if (!bout) {
      bout = db.bouts.create(live.row.id);
      events.publish({ kind: "bout.started", fighter_id: live.row.id, bout_id: bout.id });
    }
    const boutId = bout.id;
    events.publish({ kind: "message.received", fighter_id: live.row.id, bout_id: boutId });
    fighters.setStatus(live, "fighting");
    try {
      const offered: MoveDeclaration[] = [...declaredMoves.values()].filter((m) =>
        hasCapability(live.row.manifest.capabilities ?? [], m.capability),
      );
      const { result, messages } = await runTurn(
        {
          fighter: live.row,
          bout_id: boutId,
          model: routeModel(text, live.row.manifest.model, config.model_routing, config.default_model).model,
          history: db.messages.list(boutId),
          user: { role: "user", content: text },
          offered,
          declared: declaredMoves,
          maxIterations: live.row.manifest.max_iterations ?? config.agent.max_iterations,
          loopGuardRepeats: config.agent.loop_guard_repeats,
          toolTimeoutMs: config.agent.tool_timeout_s * 1000,
          onDelta: opts.onDelta,
          request_id: opts.request_id,
        },
        { hooks, events, driver: resolveDriver, move: moveHandler },
      );
      // Durable before acknowledged: the whole turn is committed in one transaction first.
      db.messages.append(boutId, messages);
      await hooks.turn.end.promise({
        fighter: live.row,
        bout_id: boutId,
        new_messages: messages,
        usage: result.usage,
        iterations: result.iterations,
      });
      events.publish({
        kind: "message.completed",
        fighter_id: live.row.id,
        bout_id: boutId,
        usage: result.usage,
        iterations: result.iterations,
        model: result.model,
        stop_reason: result.stop_reason,
      });
      return { bout_id: boutId, ...result };
    } finally {
      fighters.setStatus(live, "idle");
    }
  }

  async function moveHandler(name: string) {
    await host.activate(`onMove:${name}`);
    return hooks.move.resolve.promise(name);
  }

  const services: RingServices = {
    version: options.version,
    startedAt,
    fighters: {
      spawn: async (request) => fighters.spawn(request),
      list: () => fighters.all().map(fighters.record),
      get: (idOrName) => fighters.record(fighters.find(idOrName)),
      manifest: (idOrName) => fighters.find(idOrName).row.manifest,
      kill: async (idOrName) => fighters.kill(idOrName),
      message,
      async messageTo(fromIdOrName, toIdOrName, content) {
        const from = fighters.find(fromIdOrName);
        const to = fighters.find(toIdOrName);
        if (from === to) throw new SparError("VALIDATION_FAILED", "a fighter cannot message itself");
        return message(to.row.id, `[message from fighter "${from.row.name}" (${from.row.id})]\n${content}`);
      },
      bouts: (idOrName) => requireStore().bouts.list(fighters.find(idOrName).row.id),
    },
    bouts: {
      messages(boutId) {
        const db = requireStore();
        if (!db.bouts.get(boutId)) throw new SparError("BOUT_NOT_FOUND", `no bout with id "${boutId}"`);
        return db.messages.list(boutId);
      },
    },
    memory: {
      store: (fighterId, key, value) => requireStore().memories.put(fighterId, key, value),
      recall: (fighterId, query, limit) => requireStore().memories.search(fighterId, query, limit),
    },
    moves: { list: () => [...declaredMoves.values()] },
    plugins: {
      list: () =>
        host.eligible.map((p) => ({
          id: p.manifest.id,
          kind: p.manifest.kind,
          version: p.manifest.version,
          description: p.manifest.description,
          source: p.source,
          active: host.isActive(p.manifest.id),
        })),
      manifest: (id) => host.manifestFor(id),
    },
  };

  return {
    hooks,
    events,
    services,
    host,
    async open(masterSecret) {
      // The store's key derivation (Argon2id, on the thread pool) runs while the other start-up
      // plugins are imported and applied on the main thread.
      await host.activatePlugin(config.plugins.store);
      const opening = hooks.store.open.promise({ home: options.home, masterSecret });
      const others = host.activate("onStartup");
      const [opened] = await Promise.all([opening, others]);
      if (!opened)
        throw new SparError("STORE_FAILED", `the store plugin ${config.plugins.store} did not open a store`);
      store = opened;
      fighters.load(opened.fighters.list());
    },
    async ensureDefaultFighter() {
      if (!fighters.all().some((f) => f.row.name === DEFAULT_FIGHTER_NAME)) {
        fighters.spawn({ manifest: FIGHTER_TEMPLATES[DEFAULT_FIGHTER_NAME] });
      }
    },
    async close() {
      await hooks.daemon.close.promise();
      await Promise.allSettled(fighters.all().map((f) => f.queue));
      store?.close();
      store = undefined;
    },
  };
}
