/**
 * What the Arena's own routes answer, as fastify `response` schemas: fastify serialises each answer
 * with the schema of its status, and the OpenAPI document (openapi.ts) shows the same schemas, its
 * records (titled) as named components. Written from the code that builds each body.
 */
import {
  BOUT_SCHEMA,
  FIGHTER_SCHEMA,
  FREE_OBJECT,
  listOf,
  MESSAGE_REPLY_SCHEMA,
  MESSAGE_SCHEMA,
  record,
  SKILL_SCHEMA,
  TURN_SCHEMA,
} from "../../sdk/kits/http.js";

type Schema = Record<string, unknown>;

const string = { type: "string" } as const;
const integer = { type: "integer" } as const;
const boolean = { type: "boolean" } as const;
const nullableInteger = { type: ["integer", "null"] } as const;

/** A 204: no body. */
export const NO_CONTENT = { description: "Done; no body.", content: {} } as const;

/** `200` and, with `Accept: text/event-stream`, the same reply streamed as it is written. */
export const MESSAGE_RESPONSES = {
  200: {
    description:
      "The fighter's reply once its turn ends; with `Accept: text/event-stream`, the turn streamed as server-sent events",
    content: {
      "application/json": { schema: MESSAGE_REPLY_SCHEMA },
      "text/event-stream": {
        schema: {
          type: "string",
          description:
            "Server-sent events: `event: delta` (`{text}`) as the reply is written, `event: approval` (an approval the turn waits for), then `event: reply` (the MessageReply) or `event: error` (the error envelope)",
        },
      },
    },
  },
} as const;

const USAGE_SUMMARY = record("UsageSummary", {
  provider: string,
  model: string,
  requests: integer,
  input_tokens: integer,
  output_tokens: integer,
  cached_tokens: integer,
  cache_write_tokens: integer,
  cost_micros: nullableInteger,
  unpriced_requests: integer,
});

export const FIGHTER_USAGE = record("FighterUsage", {
  fighter: string,
  usage: { type: "array", items: USAGE_SUMMARY },
  totals: record(undefined, { requests: integer, input_tokens: integer, output_tokens: integer }),
  cost: record(undefined, {
    cost_micros: nullableInteger,
    currency: { const: "USD" },
    unpriced_requests: integer,
  }),
});

export const PROMPT_CONTEXT = record("PromptContext", {
  fighter: string,
  bout_id: { type: ["string", "null"], description: "the bout the next turn continues; null: a new one" },
  model: record(undefined, { provider: string, model: string }),
  message: string,
  parts: {
    type: "array",
    items: record(
      undefined,
      { part: string, source: string, stable: boolean, tokens: integer },
      { count: integer },
    ),
  },
  input_tokens: integer,
  cache: record(undefined, { enabled: boolean, stable_tokens: integer }),
  cost: {
    anyOf: [
      record(undefined, {
        uncached_micros: integer,
        cached_micros: nullableInteger,
        currency: { const: "USD" },
      }),
      { type: "null" },
    ],
  },
});

const MOVE = record(
  "Move",
  { name: string, description: string, capability: string, input_schema: FREE_OBJECT },
  {
    server: string,
    effects: { enum: ["read", "workspace", "external"] },
    destructive: boolean,
    plugin: { type: "string", description: "the plugin that declares it" },
  },
);

const PLUGIN = record("Plugin", {
  id: string,
  kind: string,
  version: string,
  description: string,
  source: { enum: ["bundled", "user"] },
  active: boolean,
  dir: string,
});

const CHANNEL = record(
  "Channel",
  {
    platform: string,
    mode: string,
    connected: boolean,
    fighter: string,
    allowlist_size: integer,
    inbound: integer,
    outbound: integer,
    refused: record(undefined, { signature: integer, allowlist: integer, rate: integer }),
  },
  { webhook_url: string, last_inbound_at: string, error: string },
);

const TUNNEL = record(
  "Tunnel",
  { url: string, mode: { enum: ["quick", "named", "manual"] } },
  { error: string },
);

const STATUS = record("Status", {
  status: { const: "ok" },
  version: string,
  uptime_s: integer,
  fighters: {
    type: "array",
    items: record(undefined, {
      id: string,
      name: string,
      status: { enum: ["idle", "fighting", "resting", "awaiting_approval"] },
    }),
  },
});

/** Every route's `response` by route: what fastify serialises and the document shows. */
export const RESPONSES = {
  listFighters: { 200: listOf("fighters", FIGHTER_SCHEMA) },
  spawnFighter: { 201: FIGHTER_SCHEMA },
  getFighter: { 200: FIGHTER_SCHEMA },
  killFighter: { 204: NO_CONTENT },
  cancelTurn: {
    200: record(undefined, { cancelled: { const: true }, turn_id: string, bout_id: string }),
  },
  listBouts: { 200: listOf("bouts", BOUT_SCHEMA, "the fighter's bouts, each with its origin") },
  listMessages: { 200: listOf("messages", MESSAGE_SCHEMA, "oldest first") },
  listTurns: { 200: listOf("turns", TURN_SCHEMA) },
  getFighterUsage: { 200: FIGHTER_USAGE },
  getFighterContext: { 200: PROMPT_CONTEXT },
  listMoves: {
    200: record(undefined, {
      moves: { type: "array", items: MOVE },
      skills: { type: "array", items: SKILL_SCHEMA },
    }),
  },
  listPlugins: { 200: listOf("plugins", PLUGIN) },
  listChannels: { 200: listOf("channels", CHANNEL) },
  getChannel: { 200: CHANNEL },
  getTunnel: { 200: TUNNEL },
  getStatus: { 200: STATUS },
  backupStore: {
    201: record("Backup", {
      path: string,
      manifest: { type: "string", description: "the manifest `spar restore` needs, beside the backup" },
      bytes: integer,
      schema_version: integer,
    }),
  },
  getHealth: {
    200: record("Health", { status: { const: "ok" }, version: string }),
    503: record("Unhealthy", {
      status: { const: "unhealthy" },
      version: string,
      store: { type: "string", description: "the store's problem, by kind" },
    }),
  },
  issueWsTicket: {
    200: record("WsTicket", {
      ticket: { type: "string", description: "one use: `GET /api/v1/ws?ticket=<ticket>`" },
      expires_in_s: integer,
    }),
  },
  getKey: {
    200: record("KeyInfo", {
      key: { type: ["string", "null"], description: "the signing key's id; null: unsigned, on loopback" },
      scope: string,
      fighters: {
        type: ["array", "null"],
        items: string,
        description: "a `chat` key's fighters; null for the other scopes",
      },
      may: record(undefined, { read: boolean, operate: boolean, admin: boolean }),
    }),
  },
} satisfies Record<string, Record<number, Schema>>;
