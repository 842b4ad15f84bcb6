import { randomUUID } from "node:crypto";
import { DEFAULT_FIGHTER_NAME, fighterTemplate, templateNames } from "../../lib/fighter-files.js";
import { SparError } from "../../sdk/errors.js";
import type { EventBus } from "../../sdk/events.js";
import type { SpawnRequest } from "../../sdk/services.js";
import type { Store } from "../../sdk/store-types.js";
import type {
  FighterManifest,
  FighterRecord,
  FighterRow,
  FighterStatus,
  ModelSettings,
} from "../../sdk/types.js";
import { validateFighterManifest } from "./fighter-manifest.js";

/** A fighter in the registry: its stored row plus what only exists while the daemon runs. */
export interface LiveFighter {
  row: FighterRow;
  status: FighterStatus;
  /** The tail of this fighter's turn queue: turns run one at a time, in arrival order. */
  queue: Promise<unknown>;
  /** Estimated tokens of the context its last turn left (for quota reservations). */
  contextTokens?: number;
}

export interface FighterRegistry {
  /** Fills the registry from the store (every fighter starts idle after a restart). */
  load(rows: FighterRow[]): void;
  /** A fighter's name by id, for messages; the id itself when it is not (or no longer) live. */
  name(id: string): string;
  /** By id, then by name; FIGHTER_NOT_FOUND otherwise. */
  find(idOrName: string): LiveFighter;
  /** As `find`, then from the store: a fighter another daemon sharing the store spawned. */
  lookup(idOrName: string): Promise<LiveFighter>;
  all(): LiveFighter[];
  isLive(live: LiveFighter): boolean;
  record(live: LiveFighter): FighterRecord;
  setStatus(live: LiveFighter, status: FighterStatus): void;
  spawn(request: SpawnRequest): Promise<FighterRecord>;
  kill(idOrName: string): Promise<void>;
  modelFor(manifest: FighterManifest): ModelSettings;
}

/**
 * The Ring's fighter registry: names are unique among live fighters, every change is written to the
 * store first and then announced on the bus. Daemons sharing a store and a cluster bus follow each
 * other's spawns and kills from those announcements.
 */
export function createFighterRegistry(options: {
  events: EventBus;
  store: () => Store;
  defaultModel: ModelSettings;
  /** Why a manifest's own model cannot work (unknown provider, missing key), if it cannot. */
  modelProblem: (settings: ModelSettings) => string | undefined;
  /** Capability types a manifest may name: the kernel's and those installed plugins' moves declare. */
  capabilities: ReadonlySet<string>;
  /** Throws when a plugin refuses the manifest's grants (the Ring asks `fighter.spawning`). */
  vetGrants?: (manifest: FighterManifest) => Promise<void>;
}): FighterRegistry {
  const { events } = options;
  const fighters = new Map<string, LiveFighter>();

  const modelFor = (manifest: FighterManifest) => manifest.model ?? options.defaultModel;

  function adopt(row: FighterRow): LiveFighter {
    const known = fighters.get(row.id);
    if (known) return known;
    const live: LiveFighter = { row, status: "idle", queue: Promise.resolve() };
    fighters.set(row.id, live);
    return live;
  }

  events.subscribe((event) => {
    if (event.kind === "fighter.killed") fighters.delete(event.fighter_id);
    else if (event.kind === "fighter.spawned" && !fighters.has(event.fighter_id)) {
      // Spawned by another daemon: its row is in the shared store.
      options
        .store()
        .fighters.get(event.fighter_id)
        .then((row) => row && adopt(row))
        .catch(() => undefined);
    }
  });

  function find(idOrName: string): LiveFighter {
    const live = fighters.get(idOrName) ?? [...fighters.values()].find((f) => f.row.name === idOrName);
    if (!live) {
      throw new SparError("FIGHTER_NOT_FOUND", `no fighter with id or name "${idOrName}"`, {
        fighter: idOrName,
      });
    }
    return live;
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

  function manifestFor(request: SpawnRequest): FighterManifest {
    if (!("template" in request)) return validateFighterManifest(request.manifest, options.capabilities);
    const template = fighterTemplate(request.template);
    if (!template || request.template === DEFAULT_FIGHTER_NAME) {
      throw new SparError(
        "VALIDATION_FAILED",
        `unknown fighter kind "${request.template}"; kinds: ${templateNames().join(", ")}`,
      );
    }
    return validateFighterManifest(
      { ...template, name: request.name ?? template.name },
      options.capabilities,
    );
  }

  return {
    load(rows) {
      for (const row of rows) adopt(row);
    },
    find,
    async lookup(idOrName) {
      try {
        return find(idOrName);
      } catch (err) {
        const store = options.store();
        const row = (await store.fighters.get(idOrName)) ?? (await store.fighters.getByName(idOrName));
        if (!row) throw err;
        return adopt(row);
      }
    },
    name: (id) => fighters.get(id)?.row.name ?? id,
    all: () => [...fighters.values()],
    isLive: (live) => fighters.get(live.row.id) === live,
    record,
    modelFor,
    setStatus(live, status) {
      if (live.status === status) return;
      live.status = status;
      events.publish({ kind: "fighter.status", fighter_id: live.row.id, status });
    },
    async spawn(request) {
      const manifest = manifestFor(request);
      const problem = manifest.model ? options.modelProblem(manifest.model) : undefined;
      if (problem) throw new SparError("VALIDATION_FAILED", problem, { path: "/manifest/model" });
      await options.vetGrants?.(manifest);
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
      // The store's unique index on live names settles two spawns of one name racing here.
      await options.store().fighters.insert(row);
      const live = adopt(row);
      events.publish({ kind: "fighter.spawned", fighter_id: row.id, name: row.name });
      return record(live);
    },
    async kill(idOrName) {
      const live = find(idOrName);
      // `spar chat` talks to it by default: killing it would leave a new user at a dead end.
      if (live.row.name === DEFAULT_FIGHTER_NAME) {
        throw new SparError(
          "CONFLICT",
          `the default fighter "${DEFAULT_FIGHTER_NAME}" cannot be killed: spar chat talks to it. Spawn your own ` +
            `fighters for other work (spar fighter spawn <kind>), or change its Creed (PUT /api/v1/fighters/${DEFAULT_FIGHTER_NAME}/creed)`,
        );
      }
      await options.store().fighters.kill(live.row.id);
      fighters.delete(live.row.id);
      events.publish({ kind: "fighter.killed", fighter_id: live.row.id, name: live.row.name });
    },
  };
}
