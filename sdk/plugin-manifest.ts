/** A plugin's manifest (plugin.json) and the kinds a plugin can be. */
import type { DataDeclaration } from "./collections.js";
import type { RingGroup } from "./plugin-scope.js";
import type { MoveDeclaration, ProviderDeclaration } from "./types.js";

/** Keep in step with plugin.schema.json's `kind` enum (a test checks they agree). */
export const PLUGIN_KINDS = [
  "provider",
  "channel",
  "strategy",
  "moves",
  "skill-pack",
  "compaction",
  "store",
  "arena",
  "tunnel",
  "scheduler",
  "troops",
  "bus",
  "identity",
  "routing",
  "dashboard",
  "policy",
  "observability",
] as const;

export type PluginKind = (typeof PLUGIN_KINDS)[number];

/** A plugin.json as validated against plugin.schema.json. */
export interface PluginManifest {
  id: string;
  version: string;
  kernel: string;
  kind: PluginKind;
  description: string;
  /** Absent only for a skill pack, which is data: nothing of it is imported. */
  entry?: string;
  activation?: string[];
  contributes?: {
    providers?: ProviderDeclaration[];
    channels?: string[];
    strategies?: string[];
    compaction?: string[];
    skills?: string[];
    moves?: MoveDeclaration[];
    /** Event kinds the plugin publishes; it may publish no others. */
    events?: string[];
  };
  requires?: string[];
  /** The groups of `api.ring` it uses (plugin-scope.ts); it is handed those only. None when absent. */
  uses?: RingGroup[];
  /** The config.toml tables it owns, by path, with their JSON Schemas (config-sections.ts). */
  sections?: Record<string, Record<string, unknown>>;
  /** Its own collections (`api.data`), stored by the active store plugin (collections.ts). */
  data?: DataDeclaration;
}
