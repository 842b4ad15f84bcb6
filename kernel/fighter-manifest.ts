import { MODEL_SETTINGS_SCHEMA } from "./config.js";
import { SparError } from "./errors.js";
import { formatSchemaErrors, validatorFor } from "./schema.js";
import type { Capability, FighterManifest } from "./types.js";

export const CAPABILITY_TYPES = [
  "memory",
  "knowledge_graph",
  "file_read",
  "file_write",
  "shell_exec",
  "network",
  "agent_message",
  "agent_spawn",
  "channel_notify",
  "schedule",
  "desktop",
  "mcp",
  "full_access",
] as const;

export const FIGHTER_MANIFEST_SCHEMA = {
  type: "object",
  additionalProperties: false,
  required: ["name", "description", "system_prompt"],
  properties: {
    name: { type: "string", minLength: 1, maxLength: 64, pattern: "^[A-Za-z0-9][A-Za-z0-9 _.-]*$" },
    description: { type: "string", maxLength: 1000 },
    system_prompt: { type: "string", minLength: 1, maxLength: 100_000 },
    model: MODEL_SETTINGS_SCHEMA,
    weight_class: { enum: ["flyweight", "lightweight", "middleweight", "heavyweight"] },
    capabilities: {
      type: "array",
      maxItems: 64,
      items: {
        type: "object",
        additionalProperties: false,
        required: ["type"],
        properties: {
          type: { enum: CAPABILITY_TYPES },
          scope: { type: "string" },
          pattern: { type: "string" },
          server: { type: "string" },
        },
      },
    },
    skills: { type: "array", maxItems: 200, items: { type: "string", minLength: 1 } },
    quota: {
      type: "object",
      additionalProperties: false,
      properties: {
        requests_per_minute: { type: "integer", minimum: 1 },
        tokens_per_minute: { type: "integer", minimum: 1 },
      },
    },
    max_iterations: { type: "integer", minimum: 1, maximum: 1000 },
  },
} as const;

/** Validates a manifest (unknown fields are refused with their path) and returns it with defaults. */
export function validateFighterManifest(input: unknown): FighterManifest {
  // Said plainly before the schema's pattern error: "spar " and "spar" would look the same in a list.
  const name = (input as { name?: unknown } | null)?.name;
  if (typeof name === "string" && name.trim() !== name) {
    throw new SparError(
      "VALIDATION_FAILED",
      `manifest.name ${JSON.stringify(name)} cannot start or end with a space; did you mean ${JSON.stringify(name.trim())}?`,
      { path: "/manifest/name" },
    );
  }
  const validate = validatorFor(FIGHTER_MANIFEST_SCHEMA);
  if (!validate(input)) {
    const message = formatSchemaErrors(validate.errors, "manifest");
    throw new SparError("VALIDATION_FAILED", message, {
      path: `/manifest${validate.errors?.[0]?.instancePath ?? ""}`,
    });
  }
  const manifest = input as FighterManifest;
  return {
    ...manifest,
    weight_class: manifest.weight_class ?? "middleweight",
    capabilities: manifest.capabilities ?? [{ type: "memory" }],
    skills: manifest.skills ?? [],
  };
}

/** True when the grants include `type` or `full_access`. */
export function hasCapability(grants: readonly Capability[], type: string): boolean {
  return grants.some((c) => c.type === type || c.type === "full_access");
}

export const DEFAULT_FIGHTER_NAME = "spar";

/** Bundled fighter kinds for `spar fighter spawn <kind>`; `spar` is the default fighter. */
export const FIGHTER_TEMPLATES: Readonly<Record<string, FighterManifest>> = {
  spar: {
    name: DEFAULT_FIGHTER_NAME,
    description: "The default fighter: a capable general assistant with full tool access.",
    system_prompt:
      "You are Spar, a helpful assistant running on the user's own machine. Be direct and accurate. " +
      "Use your tools when they help, and say plainly when you do not know something.",
    weight_class: "heavyweight",
    capabilities: [{ type: "full_access" }],
  },
  coder: {
    name: "coder",
    description: "Full-stack engineer with shell and file access inside its workspace.",
    system_prompt:
      "You are a senior full-stack engineer. Read before you change, make small verified steps, run the " +
      "tests, and explain what you changed and why.",
    weight_class: "heavyweight",
    capabilities: [
      { type: "shell_exec", pattern: "*" },
      { type: "file_read" },
      { type: "file_write" },
      { type: "memory" },
    ],
  },
  scout: {
    name: "scout",
    description: "Deep research agent: searches, reads sources, cross-checks and cites.",
    system_prompt:
      "You are a careful researcher. Find primary sources, cross-check claims, separate facts from " +
      "inference, and cite where each fact came from.",
    weight_class: "middleweight",
    capabilities: [{ type: "network", pattern: "*" }, { type: "memory" }, { type: "knowledge_graph" }],
  },
  oracle: {
    name: "oracle",
    description: "Conversational agent with broad knowledge and a memory of past talks.",
    system_prompt:
      "You are a thoughtful conversational partner with broad knowledge. Answer clearly, ask when a " +
      "question is ambiguous, and remember what matters to the user.",
    weight_class: "middleweight",
    capabilities: [{ type: "memory" }],
  },
  scribe: {
    name: "scribe",
    description: "Writer and editor: drafts, tightens and proofreads text in its workspace.",
    system_prompt:
      "You are an exacting editor. Keep the author's voice, cut what does not earn its place, and fix " +
      "errors of fact, grammar and consistency.",
    weight_class: "lightweight",
    capabilities: [{ type: "file_read" }, { type: "file_write" }, { type: "memory" }],
  },
};

/** The template names a user can spawn (the default fighter is not one of them). */
export function templateNames(): string[] {
  return Object.keys(FIGHTER_TEMPLATES).filter((n) => n !== DEFAULT_FIGHTER_NAME);
}
