import { randomUUID } from "node:crypto";
import { runTurn } from "./agent-loop.js";
import type { SparConfig } from "./config.js";
import { SparError } from "./errors.js";
import { createEventBus, type EventBus } from "./events.js";
import {
  DEFAULT_FIGHTER_NAME,
  FIGHTER_TEMPLATES,
  hasCapability,
  templateNames,
  validateFighterManifest,
} from "./fighter-manifest.js";
import { createHooks, type RingHooks } from "./hooks.js";
import { createPluginHost, type PluginHost } from "./plugin-host.js";
import type { DiscoveredPlugin } from "./plugin-manifest.js";
import type { Logger } from "./sdk.js";
import type {
  FighterMessageResult,
  MessageOptions,
  MoveListing,
  RingServices,
  SpawnRequest,
} from "./services.js";
import type {
  FighterManifest,
  FighterRecord,
  FighterRow,
  FighterStatus,
  LlmDriver,
  ModelSettings,
  MoveDeclaration,
  Store,
} from "./types.js";

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

interface LiveFighter {
  row: FighterRow;
  status: FighterStatus;
  /** The tail of this fighter's turn queue: turns run one at a time, in arrival order. */
  queue: Promise<unknown>;
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
  const fighters = new Map<string, LiveFighter>();
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

  function find(idOrName: string): LiveFighter {
    const live = fighters.get(idOrName) ?? [...fighters.values()].find((f) => f.row.name === idOrName);
    if (!live)
      throw new SparError("FIGHTER_NOT_FOUND", `no fighter with id or name "${idOrName}"`, {
        fighter: idOrName,
      });
    return live;
  }

  function modelFor(manifest: FighterManifest): ModelSettings {
    return manifest.model ?? config.default_model;
  }

  function record(live: LiveFighter): FighterRecord {
    const m = live.row.manifest;
    return {
      id: live.row.id,
      name: live.row.name,
      description: m.description,
      status: live.status,
      weight_class: m.weight_class ?? "middleweight",
      model: modelFor(m),
      capabilities: m.capabilities ?? [],
      skills: m.skills ?? [],
      created_at: live.row.created_at,
    };
  }

  function setStatus(live: LiveFighter, status: FighterStatus): void {
    if (live.status === status) return;
    live.status = status;
    events.publish({ kind: "fighter.status", fighter_id: live.row.id, status });
  }

  async function resolveDriver(settings: ModelSettings): Promise<LlmDriver> {
    await host.activate(`onProvider:${settings.provider}`);
    const driver = await hooks.provider.resolve.promise(settings);
    if (!driver) {
      const known = host.eligible.flatMap((p) => p.manifest.contributes?.providers ?? []);
      throw new SparError(
        "PROVIDER_ERROR",
        `no plugin provides the provider "${settings.provider}" (installed: ${known.join(", ") || "none"})`,
        { provider: settings.provider },
      );
    }
    return driver;
  }

  async function spawn(request: SpawnRequest): Promise<FighterRecord> {
    let manifest: FighterManifest;
    if ("template" in request) {
      const template = FIGHTER_TEMPLATES[request.template];
      if (!template || request.template === DEFAULT_FIGHTER_NAME) {
        throw new SparError(
          "VALIDATION_FAILED",
          `unknown fighter kind "${request.template}"; kinds: ${templateNames().join(", ")}`,
        );
      }
      manifest = validateFighterManifest({ ...template, name: request.name ?? template.name });
    } else {
      manifest = validateFighterManifest(request.manifest);
    }
    if ([...fighters.values()].some((f) => f.row.name === manifest.name)) {
      throw new SparError(
        "CONFLICT",
        `a fighter named "${manifest.name}" already exists; choose another name`,
      );
    }
    const row: FighterRow = {
      id: randomUUID(),
      name: manifest.name,
      manifest,
      created_at: new Date().toISOString(),
    };
    requireStore().fighters.insert(row);
    const live: LiveFighter = { row, status: "idle", queue: Promise.resolve() };
    fighters.set(row.id, live);
    events.publish({ kind: "fighter.spawned", fighter_id: row.id, name: row.name });
    return record(live);
  }

  async function message(
    idOrName: string,
    text: string,
    opts: MessageOptions = {},
  ): Promise<FighterMessageResult> {
    const live = find(idOrName);
    const turn = live.queue.then(() => fight(live, text, opts));
    live.queue = turn.catch(() => undefined);
    return turn;
  }

  async function fight(live: LiveFighter, text: string, opts: MessageOptions): Promise<FighterMessageResult> {
    const db = requireStore();
    if (!fighters.has(live.row.id))
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
    setStatus(live, "fighting");
    try {
      const offered: MoveDeclaration[] = [...declaredMoves.values()].filter((m) =>
        hasCapability(live.row.manifest.capabilities ?? [], m.capability),
      );
      const { result, messages } = await runTurn(
        {
          fighter: live.row,
          bout_id: boutId,
          model: modelFor(live.row.manifest),
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
      setStatus(live, "idle");
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
      spawn,
      list: () => [...fighters.values()].map(record),
      get: (idOrName) => record(find(idOrName)),
      manifest: (idOrName) => find(idOrName).row.manifest,
      async kill(idOrName) {
        const live = find(idOrName);
        requireStore().fighters.kill(live.row.id);
        fighters.delete(live.row.id);
        events.publish({ kind: "fighter.killed", fighter_id: live.row.id, name: live.row.name });
      },
      message,
      async messageTo(fromIdOrName, toIdOrName, content) {
        const from = find(fromIdOrName);
        const to = find(toIdOrName);
        if (from === to) throw new SparError("VALIDATION_FAILED", "a fighter cannot message itself");
        return message(to.row.id, `[message from fighter "${from.row.name}" (${from.row.id})]\n${content}`);
      },
      bouts: (idOrName) => requireStore().bouts.list(find(idOrName).row.id),
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
      for (const row of opened.fighters.list())
        fighters.set(row.id, { row, status: "idle", queue: Promise.resolve() });
    },
    async ensureDefaultFighter() {
      if (![...fighters.values()].some((f) => f.row.name === DEFAULT_FIGHTER_NAME)) {
        const template = FIGHTER_TEMPLATES[DEFAULT_FIGHTER_NAME];
        await spawn({ manifest: template });
      }
    },
    async close() {
      await hooks.daemon.close.promise();
      await Promise.allSettled([...fighters.values()].map((f) => f.queue));
      store?.close();
      store = undefined;
    },
  };
}
