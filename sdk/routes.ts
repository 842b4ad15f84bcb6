/**
 * The routes a plugin adds to the daemon's listeners through `hooks.arena.routes` (DESIGN §6): what a
 * route declares, what its handler receives and answers. Re-exported by sdk/types.ts.
 */

/** A request to a route a plugin added through `hooks.arena.routes`. */
export interface RouteRequest {
  method: string;
  /** The path without its query, e.g. `/api/v1/dice/stats`. */
  path: string;
  /** The `:name` segments of the route's path. */
  params: Record<string, string>;
  query: Record<string, string>;
  headers: Record<string, string | string[] | undefined>;
  /** The body parsed as JSON when it was JSON (prototype keys refused, as everywhere). */
  body: unknown;
  /** The body exactly as received: what a webhook's signature is computed over. */
  rawBody?: Buffer;
  /** The peer's address. */
  ip: string;
  /** The key that signed the request (api routes), when it was signed. */
  keyId?: string;
  /** Fires when the client goes away before the answer is sent. */
  signal: AbortSignal;
}

export interface RouteResponse {
  /** Default 200. */
  status?: number;
  headers?: Record<string, string>;
  /** Sent as JSON, unless it is a string or a Buffer (then `content-type` should be given). */
  body?: unknown;
}

export interface PluginRoute {
  /**
   * `api`: the API listener, behind authentication, under `/api/v1/…` (also answered under `/api/…`).
   * `webhook`: the webhook listener (`[channels] webhook_listen`): the route's `verify` checks its
   * platform's signature before the body is parsed. It starts only when a webhook route exists.
   */
  listener: "api" | "webhook";
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  /** `:name` segments are params; a trailing `*` matches the rest. */
  path: string;
  /**
   * The operation's stable name in the OpenAPI document (`listTroops`): what a generated client
   * calls it. Every api route has one (a test holds them unique).
   */
  operationId?: string;
  /** One line on what the route does, for the OpenAPI document. */
  summary?: string;
  /** More than a line, when needed (Markdown), for the OpenAPI document. */
  description?: string;
  /**
   * JSON Schema of the query parameters the route reads (an object schema): documented, and
   * validated only by the handler (the query of a plugin route is passed on as strings).
   */
  query?: Record<string, unknown>;
  /**
   * The answers by status (`"200"`, `"201"`), each a JSON Schema: a JSON body is serialised with
   * the schema of its status (fast-json-stringify, as fastify does: a property it does not declare
   * is left out), and the OpenAPI document shows them. A schema with `title: "Troop"` is a named
   * record there. Errors need none: they are the one envelope.
   *
   * @example
   * response: { "200": { type: "object", required: ["removed"], properties: { removed: { type: "boolean" } } } }
   */
  response?: Record<string, Record<string, unknown>>;
  /** JSON Schema the `:name` params must pass (an object schema); the OpenAPI document shows it. */
  params?: Record<string, unknown>;
  /** JSON Schema the body must pass (unknown fields refused, as everywhere). */
  body?: Record<string, unknown>;
  /**
   * An api route that takes more than `[api] body_limit_bytes` (a skill's files): the most bytes its
   * body may hold, at most MAX_ROUTE_BODY_BYTES (64 MiB). Every other route keeps the API's limit.
   */
  bodyLimit?: number;
  /**
   * Webhook routes must have one: checks the platform's signature over `rawBody` before anything
   * else. False: 401 UNAUTHORIZED, and the body is never parsed nor the handler called.
   */
  verify?(request: WebhookDelivery): boolean | Promise<boolean>;
  handler(request: RouteRequest): Promise<RouteResponse>;
}

/** What a webhook route's `verify` sees: the delivery as received, unparsed. */
export interface WebhookDelivery {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  rawBody: Buffer;
  ip: string;
}

/** Files served read-only on the API listener under `prefix` (a dashboard), with their own CSP. */
export interface PublicAssets {
  listener: "public";
  prefix: string;
  dir: string;
  /** Content-Security-Policy for these files; default: same-origin scripts, styles and API calls. */
  csp?: string;
}

export interface RouteRegistry {
  add(route: PluginRoute | PublicAssets): void;
}
