import type { KeyObject } from "node:crypto";
import type { RecalledMemory } from "./memory.js";
import type { PluginManifest } from "./plugin-manifest.js";
import type {
  CreedDocument,
  KgEntity,
  KgRelation,
  MemoryRecord,
  Relationship,
  StoreCheck,
  StoreHealth,
  UsageSummary,
} from "./store-types.js";
import type {
  BoutRecord,
  FighterManifest,
  FighterRecord,
  LlmRequest,
  LlmResponse,
  ModelSettings,
  MoveDeclaration,
  StoredMessage,
  Usage,
} from "./types.js";

/** The answer to one message: DESIGN §4 step 7. */
export interface FighterMessageResult {
  bout_id: string;
  response: string;
  usage: Usage;
  iterations: number;
  tool_calls: { name: string; ok: boolean }[];
  model: string;
  /** `end` normally; `max_iterations` or `loop_guard` when the loop was stopped. */
  stop_reason: "end" | "max_iterations" | "loop_guard";
}

export type SpawnRequest = { manifest: unknown } | { template: string; name?: string };

export interface MessageOptions {
  bout_id?: string;
  /** Called with each streamed text delta as the model produces it. */
  onDelta?: (text: string) => void;
  /** Tags the `message.delta` events so a WebSocket client can match them to its request. */
  request_id?: string;
}

export type CreedView = CreedDocument & { fighter: string };

export interface FighterUsage {
  fighter: string;
  usage: UsageSummary[];
  totals: { requests: number; input_tokens: number; output_tokens: number };
}

export interface MoveListing extends MoveDeclaration {
  plugin: string;
}

export interface PluginListing {
  id: string;
  kind: string;
  version: string;
  description: string;
  source: "bundled" | "user";
  active: boolean;
}

/**
 * What the Ring offers its plugins and entry points (Arena, channels, gorillas). Fighters are
 * addressed by id or by name everywhere.
 */
export interface RingServices {
  readonly version: string;
  readonly startedAt: Date;
  readonly fighters: {
    spawn(request: SpawnRequest): Promise<FighterRecord>;
    list(): FighterRecord[];
    get(idOrName: string): FighterRecord;
    kill(idOrName: string): Promise<void>;
    message(idOrName: string, text: string, options?: MessageOptions): Promise<FighterMessageResult>;
    messageTo(fromIdOrName: string, toIdOrName: string, content: string): Promise<FighterMessageResult>;
    bouts(idOrName: string): BoutRecord[];
    manifest(idOrName: string): FighterManifest;
    creed(idOrName: string): CreedView;
    /** Replaces identity, traits and directives; observations, relationships and counters stay. */
    editCreed(idOrName: string, edit: Pick<CreedDocument, "identity" | "traits" | "directives">): CreedView;
    relationships(idOrName: string): Relationship[];
    usage(idOrName: string): FighterUsage;
  };
  readonly bouts: {
    messages(boutId: string): StoredMessage[];
  };
  /** Each fighter's long-term memory (the memory moves' substrate). */
  readonly memory: {
    store(fighterId: string, key: string, value: string): MemoryRecord;
    recall(fighterId: string, query: string, limit: number): RecalledMemory[];
  };
  /** Each fighter's knowledge graph (the knowledge moves' substrate). */
  readonly knowledge: {
    add(
      fighterId: string,
      entities: KgEntity[],
      relations: KgRelation[],
    ): { entities_added: number; entities_merged: number; relations_added: number };
    query(fighterId: string, query: string, limit: number): (KgEntity & { relations: KgRelation[] })[];
  };
  /** One model call under the provider policy (timeouts, retries), e.g. for a summary. */
  readonly llm: {
    complete(model: ModelSettings, request: Omit<LlmRequest, "model">): Promise<LlmResponse>;
  };
  readonly moves: { list(): MoveListing[] };
  /** Request signing: the authorized public keys and the nonces already used. */
  readonly auth: {
    key(keyId: string): KeyObject | undefined;
    keyCount(): number;
    /** False when the key already used this nonce (a replay). */
    claimNonce(keyId: string, nonce: string, expiresAt: number): boolean;
  };
  readonly plugins: { list(): PluginListing[]; manifest(id: string): PluginManifest | undefined };
  /** The store's condition, for health checks and `spar doctor`: the data itself is reached above. */
  readonly store: {
    /** From memory: `corrupt` once a call or the integrity check met a damaged database. */
    health(): StoreHealth;
    /** The integrity check the store started when it opened, once it has finished. */
    integrity(): Promise<StoreCheck>;
  };
}
