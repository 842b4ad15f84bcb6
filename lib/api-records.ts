/**
 * The records the HTTP API answers with, as JSON Schemas: the routes serialise their answers with
 * them (fastify's fast-json-stringify, and plugin routes' `response`), and the OpenAPI document
 * (plugins/arena-http/openapi.ts) shows each schema titled like a record (`title: "Fighter"`) as a
 * named component a generator makes a type of. So the document cannot drift from the bodies.
 *
 * fast-json-stringify leaves out what a schema does not declare, and throws on a missing `required`
 * property: each schema here is written from the code that builds the body (sdk/types.ts,
 * sdk/services.ts, sdk/store-rows.ts), and free-form parts (a call's arguments, a move's input
 * schema) say `additionalProperties: true`.
 */
import { FIGHTER_MANIFEST_SCHEMA, MODEL_SETTINGS_SCHEMA } from "../sdk/schemas.js";

type Schema = Record<string, unknown>;

const string = { type: "string" } as const;
const integer = { type: "integer" } as const;
/** An ISO 8601 time in UTC (`2026-11-28T10:00:00.000Z`). */
const time = { type: "string", description: "ISO 8601, UTC" } as const;
/** Any JSON object, kept whole. */
export const FREE_OBJECT = { type: "object", additionalProperties: true } as const;

/** An object schema: `required` are always there, `optional` sometimes. */
export function record(
  title: string | undefined,
  required: Record<string, unknown>,
  optional: Record<string, unknown> = {},
  extra: Schema = {},
): Schema {
  return {
    ...(title ? { title } : {}),
    type: "object",
    required: Object.keys(required),
    properties: { ...required, ...optional },
    ...extra,
  };
}

/** `{<key>: [item, …]}`, what the list routes answer. */
export function listOf(key: string, item: Schema, description?: string): Schema {
  return record(undefined, {
    [key]: { type: "array", items: item, ...(description ? { description } : {}) },
  });
}

/** Tokens a turn, run or step used (Usage). */
export const USAGE_SCHEMA = record(
  "Usage",
  { input_tokens: integer, output_tokens: integer },
  { cached_tokens: integer, cache_write_tokens: integer },
);

/** Untrusted content a turn took in (TaintSource). */
export const TAINT_SOURCE_SCHEMA = record(
  "TaintSource",
  { kind: { enum: ["web", "mcp", "file", "channel", "fighter", "skill"] }, detail: string },
  { move: string },
);

/** Model settings, as a manifest and `[default_model]` give them. */
export const MODEL_SETTINGS = { title: "ModelSettings", ...MODEL_SETTINGS_SCHEMA };
/** A capability grant of a manifest. */
export const CAPABILITY = { title: "Capability", ...FIGHTER_MANIFEST_SCHEMA.properties.capabilities.items };

/** The manifest a spawn takes: the very schema the kernel validates it with (kernel/fighters/). */
export const FIGHTER_MANIFEST = {
  title: "FighterManifest",
  ...FIGHTER_MANIFEST_SCHEMA,
  properties: {
    ...FIGHTER_MANIFEST_SCHEMA.properties,
    model: MODEL_SETTINGS,
    capabilities: { ...FIGHTER_MANIFEST_SCHEMA.properties.capabilities, items: CAPABILITY },
  },
};

const FIGHTER_STATUS = { enum: ["idle", "fighting", "resting", "awaiting_approval"] } as const;

/** A fighter as the API shows it (FighterRecord). */
export const FIGHTER_SCHEMA = record(
  "Fighter",
  {
    id: string,
    name: string,
    description: string,
    status: FIGHTER_STATUS,
    weight_class: FIGHTER_MANIFEST_SCHEMA.properties.weight_class,
    model: MODEL_SETTINGS,
    capabilities: { type: "array", items: CAPABILITY },
    skills: { type: "array", items: string },
    created_at: time,
  },
  {},
  {
    examples: [
      {
        id: "01JD7Y2M3QK8T5N0V6W9X4Z1AB",
        name: "scout",
        description: "finds things out",
        status: "idle",
        weight_class: "middleweight",
        model: { provider: "openai", model: "gpt-4o-mini" },
        capabilities: [{ type: "memory" }],
        skills: [],
        created_at: "2026-11-28T10:00:00.000Z",
      },
    ],
  },
);

/** A bout (a conversation) of a fighter, with its origin. */
export const BOUT_SCHEMA = record(
  "Bout",
  {
    id: string,
    fighter_id: string,
    created_at: time,
    updated_at: time,
    message_count: integer,
  },
  {
    origin: {
      type: "string",
      description:
        "who started it: `user`, `fighter:<id>`, `troop-task:<id>`, `channel:<platform>:<chat>`, `gorilla:<name>`, `schedule`",
    },
  },
  {
    examples: [
      {
        id: "01JD7Y3B9C2D4E6F8G0H1J2K3L",
        fighter_id: "01JD7Y2M3QK8T5N0V6W9X4Z1AB",
        created_at: "2026-11-28T10:01:00.000Z",
        updated_at: "2026-11-28T10:01:04.000Z",
        message_count: 2,
        origin: "user",
      },
    ],
  },
);

/** A move an assistant message called. */
export const TOOL_CALL_SCHEMA = record(
  "ToolCall",
  { id: string, name: string, arguments: FREE_OBJECT },
  { raw_arguments: string },
);

/** A stored message: `role` says which of the optional fields it has (ChatMessage in sdk/types.ts). */
export const MESSAGE_SCHEMA = record(
  "Message",
  {
    id: string,
    bout_id: string,
    seq: integer,
    created_at: time,
    role: { enum: ["user", "assistant", "tool"] },
    content: string,
  },
  {
    turn_id: string,
    compacted: { type: "boolean" },
    tool_calls: { type: "array", items: TOOL_CALL_SCHEMA, description: "assistant: the moves it called" },
    tool_call_id: { type: "string", description: "tool: the call it answers" },
    name: { type: "string", description: "tool: the move's name" },
    is_error: { type: "boolean", description: "tool: the move failed" },
  },
);

/** A turn of a bout (TurnRecord). */
export const TURN_SCHEMA = record(
  "Turn",
  {
    id: string,
    bout_id: string,
    fighter_id: string,
    status: { enum: ["running", "awaiting_approval", "completed", "failed", "cancelled"] },
    started_at: time,
    usage: USAGE_SCHEMA,
    iterations: integer,
  },
  {
    error: record(undefined, { code: string, message: string }),
    finished_at: time,
    model: string,
    stop_reason: string,
    taint: { type: "array", items: TAINT_SOURCE_SCHEMA },
  },
);

/** A fighter's reply to a message (FighterMessageResult). */
export const MESSAGE_REPLY_SCHEMA = record(
  "MessageReply",
  {
    bout_id: string,
    turn_id: string,
    response: { type: "string", description: "the fighter's answer" },
    usage: USAGE_SCHEMA,
    iterations: integer,
    tool_calls: { type: "array", items: record(undefined, { name: string, ok: { type: "boolean" } }) },
    model: string,
    stop_reason: { enum: ["end", "max_iterations", "loop_guard"] },
  },
  { taint: { type: "array", items: TAINT_SOURCE_SCHEMA } },
  {
    examples: [
      {
        bout_id: "01JD7Y3B9C2D4E6F8G0H1J2K3L",
        turn_id: "01JD7Y3BA0000000000000000T",
        response: "Hello! What shall we look into?",
        usage: { input_tokens: 412, output_tokens: 11 },
        iterations: 1,
        tool_calls: [],
        model: "gpt-4o-mini",
        stop_reason: "end",
      },
    ],
  },
);

/**
 * The records of plugin routes (troops, gorillas, approvals, budgets): the fields each always or
 * sometimes has are declared, and `additionalProperties: true` keeps anything a plugin adds later
 * (a record a plugin owns may grow without its schema here silently dropping the new field).
 */
const open = { additionalProperties: true } as const;
const strings = { type: "array", items: string } as const;
const nullableString = { type: ["string", "null"] } as const;
const BUDGET_LIMITS = record(
  "BudgetLimits",
  {},
  {
    daily: { type: "number" },
    monthly: { type: "number" },
    daily_tokens: integer,
    monthly_tokens: integer,
    on_exceed: { enum: ["stop", "ask"] },
  },
);

/** A troop as its routes show it: the record, its members' names and who is missing. */
export const TROOP_SCHEMA = record(
  "Troop",
  {
    id: string,
    name: string,
    leader: { type: "string", description: "the leader's fighter id" },
    members: { ...strings, description: "the workers' fighter ids, in order" },
    strategy: string,
    created_at: time,
  },
  {
    budget: BUDGET_LIMITS,
    names: {
      type: "object",
      additionalProperties: string,
      description: "each member's and the leader's name, by id",
    },
    missing: { ...strings, description: "ids of members or leader no longer alive" },
  },
  {
    ...open,
    examples: [
      {
        id: "01JD7Y9TROOP0000000000000A",
        name: "pair",
        leader: "01JD7Y2M3QK8T5N0V6W9X4Z1AB",
        members: ["01JD7Y2M3QK8T5N0V6W9X4Z1AC"],
        strategy: "broadcast",
        created_at: "2026-11-28T10:05:00.000Z",
        names: { "01JD7Y2M3QK8T5N0V6W9X4Z1AB": "spar", "01JD7Y2M3QK8T5N0V6W9X4Z1AC": "scout" },
        missing: [],
      },
    ],
  },
);

const RECORDED_ERROR = { anyOf: [record(undefined, { code: string, message: string }), { type: "null" }] };

/** A task given to a troop, with its steps (TroopTaskRecord). */
export const TROOP_TASK_SCHEMA = record(
  "TroopTask",
  {
    id: string,
    troop_id: string,
    task: string,
    strategy: string,
    status: { enum: ["pending", "running", "completed", "failed", "cancelled"] },
    result: nullableString,
    steps: {
      type: "array",
      items: record(
        "TroopStep",
        {
          fighter_id: string,
          role: string,
          input: string,
          output: nullableString,
          error: RECORDED_ERROR,
          bout_id: nullableString,
          started_at: time,
          finished_at: nullableString,
          usage: USAGE_SCHEMA,
        },
        {},
        open,
      ),
    },
    error: RECORDED_ERROR,
    partial: { type: "boolean" },
    usage: USAGE_SCHEMA,
    created_at: time,
    started_at: nullableString,
    finished_at: nullableString,
  },
  { votes: { type: "array", items: { type: "object", ...open } }, reason: { type: "object", ...open } },
  open,
);

/** One cycle of a gorilla, or a skipped fire (GorillaRunRecord). */
export const GORILLA_RUN_SCHEMA = record(
  "GorillaRun",
  {
    id: string,
    gorilla: string,
    trigger: { enum: ["schedule", "manual", "catch_up"] },
    started_at: time,
    outcome: { enum: ["running", "ok", "failed", "aborted", "skipped"] },
    usage: USAGE_SCHEMA,
  },
  { finished_at: time, output: string, error: string, bout_id: string },
  open,
);

const GORILLA_STATUS = { enum: ["CAGED", "UNLEASHED", "RAMPAGING"] } as const;

/** A gorilla as its routes show it (GorillaView; one gorilla's route adds its details). */
export const GORILLA_SCHEMA = record(
  "Gorilla",
  {
    id: string,
    name: string,
    display_name: string,
    description: string,
    schedule: string,
    timezone: string,
    state: GORILLA_STATUS,
    status: GORILLA_STATUS,
    next_run_at: { ...nullableString, description: "the next fire while unleashed; null while caged" },
    last_run: { anyOf: [GORILLA_RUN_SCHEMA, { type: "null" }] },
    moves: strings,
    source: { enum: ["bundled", "user"] },
  },
  {
    caged_reason: string,
    caged_until: time,
    fighter: string,
    capabilities: { ...strings, description: "the capability types its moves need" },
    settings: FREE_OBJECT,
    model: MODEL_SETTINGS,
    running_run_id: nullableString,
    file: string,
  },
  {
    ...open,
    examples: [
      {
        id: "inbox-triage",
        name: "inbox-triage",
        display_name: "Inbox triage",
        description: "sorts the morning's mail",
        schedule: "0 7 * * *",
        timezone: "Europe/Paris",
        state: "CAGED",
        status: "CAGED",
        next_run_at: null,
        last_run: null,
        moves: ["web_fetch"],
        source: "bundled",
      },
    ],
  },
);

/** The gorilla list: the gorillas, and the files that failed to load. */
export const GORILLA_LIST_SCHEMA = record(
  undefined,
  {
    gorillas: { type: "array", items: GORILLA_SCHEMA },
    problems: {
      type: "array",
      items: record(undefined, { file: string, error: string }),
      description: "gorilla files that could not be loaded",
    },
  },
  {},
  open,
);

/** An approval request: a call waiting for, or given, the operator's answer. */
export const APPROVAL_SCHEMA = record(
  "Approval",
  {
    id: string,
    status: { enum: ["pending", "approved", "denied", "expired", "cancelled"] },
    fighter_id: string,
    fighter: string,
    bout_id: string,
    turn_id: string,
    call_id: string,
    origin: string,
    move: string,
    arguments: FREE_OBJECT,
    subject: string,
    cwd: string,
  },
  {},
  open,
);

/** An approval rule: config.toml's, or one stored by an approval with always. */
export const APPROVAL_RULE_SCHEMA = record(
  "ApprovalRule",
  { id: string, source: { enum: ["config", "stored"] }, action: string },
  {},
  open,
);

/** One limit of one budget, with its period's spend (BudgetStatus). */
export const BUDGET_STATUS_SCHEMA = record("BudgetStatus", {
  budget: string,
  scope: { enum: ["global", "fighter", "gorilla", "troop", "channel"] },
  name: nullableString,
  period: { enum: ["daily", "monthly"] },
  unit: { enum: ["money", "tokens"] },
  limit: { type: "number" },
  spent: { type: "number" },
  reserved: { type: "number" },
  currency: string,
  resets_at: time,
  on_exceed: { enum: ["stop", "ask"] },
});

/** An answer whose shape the plugin owns: an object, every field kept. */
export function openAnswer(required: Record<string, unknown>, description?: string): Schema {
  return record(undefined, required, {}, { ...open, ...(description ? { description } : {}) });
}

/** A skill as listings show it (SkillListing). */
export const SKILL_SCHEMA = record("Skill", {
  name: string,
  description: string,
  version: string,
  category: string,
  tags: { type: "array", items: string },
  moves: { type: "array", items: string },
  capabilities: { type: "array", items: string },
  source: { enum: ["bundled", "installed"] },
});

/** `?limit=&before=` of the paged lists (lib/paging.ts): newest first. */
export const PAGE_QUERY = {
  type: "object",
  properties: {
    limit: { type: "integer", minimum: 1, maximum: 500, description: "items per page (default 20)" },
    before: { type: "string", pattern: "^[A-Za-z0-9-]{1,64}$", description: "the id the page ends before" },
  },
} as const;
