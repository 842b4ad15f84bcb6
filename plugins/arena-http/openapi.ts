/**
 * The API listener's OpenAPI 3.1 document (`GET /api/v1/openapi.json`), generated from what is served:
 * every route fastify registers on the Arena's app, collected as fastify registers it (so routes
 * added to server.ts later are in it without anyone listing them), and every `api` route a plugin
 * added through `hooks.arena.routes`, each with the JSON Schemas it validates against. Nothing here
 * is written per route, so the document cannot drift from the routes.
 */
import type { FastifyInstance, FastifySchema } from "fastify";
import { ERROR_CATALOG, type PluginRoute } from "../../sdk/index.js";
import { FREE_OBJECT } from "../../sdk/kits/http.js";
import type { PluginRoutes } from "./plugin-routes.js";

declare module "fastify" {
  interface FastifySchema {
    /**
     * Leaves the route out of the OpenAPI document (@fastify/swagger's convention): for a route
     * that only refuses, such as a prefix's own path answering 404.
     */
    hide?: boolean;
    /** The operation's stable name (camelCase verb first): what a generated client calls it. */
    operationId?: string;
    /** One line on what the route does. */
    summary?: string;
    /** More on the route, when one line is not enough (Markdown). */
    description?: string;
    /**
     * The body as documented, when the route validates less of it than the kernel does afterwards
     * (a spawn's `manifest`, checked by the kernel against the same schema, for its own error paths).
     */
    documentedBody?: Record<string, unknown>;
    /** OpenAPI's `security` for the route, when it differs from the document's (`[]`: open to all). */
    security?: Record<string, string[]>[];
  }
}

type Schema = Record<string, unknown>;

/** A route as fastify registered it: what the document needs of it. */
export interface ServedRoute {
  method: string;
  /** The full URL, prefix included, in fastify's syntax (`/api/v1/fighters/:id`). */
  url: string;
  schema?: FastifySchema;
  /** A GET that upgrades to a WebSocket (@fastify/websocket's `wsHandler`). */
  websocket: boolean;
}

export interface Parameter {
  name: string;
  in: "path" | "query" | "header";
  required: boolean;
  description?: string;
  schema: Schema;
}

export interface ResponseObject {
  description: string;
  content?: Record<string, { schema?: Schema }>;
}

export interface Operation {
  operationId?: string;
  summary?: string;
  description?: string;
  security?: Record<string, string[]>[];
  parameters?: Parameter[];
  requestBody?: { required: true; content: { "application/json": { schema: Schema } } };
  responses: Record<string, ResponseObject | { $ref: string }>;
}

export interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string; description: string };
  servers: { url: string }[];
  security: Record<string, string[]>[];
  paths: Record<string, Record<string, Operation>>;
  components: {
    schemas: Record<string, Schema>;
    responses: Record<string, ResponseObject>;
    securitySchemes: Record<string, Schema>;
  };
}

/** What a trailing `*` of a plugin route (the rest of the path) is called as a path parameter. */
const REST_PARAM = "rest";

const DESCRIPTION = [
  "The Spar daemon's HTTP API, generated from the routes it serves, plugins' routes included.",
  "Every `/api/v1/...` path is also served under `/api/...`, with the same handler and shapes; only the `/api/v1` paths are listed.",
  "Request bodies are JSON and checked against their schema: unknown fields are refused.",
  "Each answer is serialised with the schema shown for its status; a plugin route that declares none answers JSON described in its README.",
  "Errors are the one envelope `{error: {code, message, ...}}` (components.schemas.Error), the HTTP status following from the code.",
  "Not listed: the webhook listener's routes (`[channels] webhook_listen`, platform deliveries each checked by its platform's signature) and the public assets plugins serve (a dashboard's files).",
].join(" ");

/** The error envelope, from the kernel's catalog: every code a caller can meet. */
const ERROR_SCHEMA: Schema = {
  type: "object",
  additionalProperties: false,
  required: ["error"],
  properties: {
    error: {
      type: "object",
      required: ["code", "message"],
      description:
        "Some codes add fields beside `code` and `message`, e.g. `path` (VALIDATION_FAILED) or `retry_after_s` (RATE_LIMITED).",
      properties: {
        code: { type: "string", enum: Object.keys(ERROR_CATALOG) },
        message: { type: "string" },
      },
      additionalProperties: true,
    },
  },
};

/**
 * RFC 9421 as well as OpenAPI can say it. Not `type: http` with a custom scheme name: an `http`
 * scheme means the `Authorization` header (RFC 7235), which a signed request does not use, and
 * generators would then send `Authorization: <scheme> <token>`. An `apiKey` in the `Signature`
 * header names a header the API really reads; the description says it is computed per request.
 */
const SIGNATURE_SCHEME: Schema = {
  type: "apiKey",
  in: "header",
  name: "Signature",
  description:
    "Not a static key: HTTP Message Signatures (RFC 9421) with Ed25519. Each request carries its own " +
    "`Signature-Input` and `Signature` headers covering `@method` and `@target-uri` and, with a body, " +
    "`content-digest` (the `Content-Digest` header, RFC 9530), with `created`, `keyid` and `nonce`, " +
    'signed with a key authorized by `spar key add`. See README.md, "Signing requests from other clients" ' +
    "(README.md#signing-requests-from-other-clients) " +
    "(`spar sign`, or `signedHeaders` from `spar/sign`). Unsigned requests are accepted only from this " +
    "machine while `[auth] allow_unsigned_loopback = true` (the default): hence the empty alternative in `security`.",
};

/**
 * Collects every route fastify registers on `app` from now on, and serves the document built from
 * them and from `plugins`' `api` routes at `/api/v1/openapi.json` (`/api/openapi.json` too, through the
 * Arena's alias rewrite, api-alias.ts). Call it
 * before any route is registered: fastify tells an `onRoute` hook only of routes that come after it.
 *
 * @example
 * const app = Fastify();
 * registerOpenApi(app, createPluginRoutes(), "0.1.0");
 * app.get("/api/v1/fighters", handler); // in the document
 */
export function registerOpenApi(
  app: FastifyInstance,
  plugins: Pick<PluginRoutes, "list">,
  version: string,
): void {
  const served: ServedRoute[] = [];
  app.addHook("onRoute", (route) => {
    for (const method of [route.method].flat()) {
      served.push({
        method,
        url: route.url,
        ...(route.schema ? { schema: route.schema } : {}),
        websocket: route.wsHandler !== undefined || route.websocket === true,
      });
    }
  });
  // Built at the first request, once: by then the daemon is ready and every plugin's routes are added.
  let document: OpenApiDocument | undefined;
  const serve = async () => {
    document ??= buildOpenApi(served, plugins.list(), version);
    return document;
  };
  const schema = {
    operationId: "getOpenApiDocument",
    summary: "This document: the API in OpenAPI 3.1",
    response: { 200: { description: "An OpenAPI 3.1 document", ...FREE_OBJECT } },
  };
  app.get("/api/v1/openapi.json", { schema }, serve);
}

/**
 * The document for the routes fastify serves and the routes plugins added. Left out: HEAD routes
 * fastify adds beside each GET (for a prefix's `/` route, beside both `/v1` and `/v1/`), catch-alls
 * (`*`: the plugin router, the asset server),
 * routes whose schema says `hide: true` (@fastify/swagger's convention, for a route that only
 * refuses) and webhook routes. A plugin route at a method and path the Arena already serves is
 * left out too: the Arena's own route is the one that answers.
 */
export function buildOpenApi(
  served: readonly ServedRoute[],
  added: readonly PluginRoute[],
  version: string,
): OpenApiDocument {
  const paths: OpenApiDocument["paths"] = {};
  const put = (method: string, path: string, operation: Operation) => {
    const item = paths[path] ?? {};
    item[method.toLowerCase()] ??= operation;
    paths[path] = item;
  };
  const has = (method: string, url: string) => served.some((r) => r.method === method && r.url === url);
  for (const route of served) {
    if (route.url.includes("*") || route.schema?.hide === true) continue;
    if (route.method === "HEAD" && (has("GET", route.url) || has("GET", route.url.replace(/(.)\/$/, "$1")))) {
      continue;
    }
    const { path, params } = openApiPath(route.url);
    put(route.method, path, servedOperation(route, params));
  }
  for (const route of added) {
    if (route.listener !== "api") continue;
    const { path, params } = openApiPath(route.path);
    const declared = declaredResponses(route.response ?? {});
    put(route.method, path, {
      ...named(route),
      ...withParameters([...pathParameters(params, route.params), ...namedParameters("query", route.query)]),
      ...withBody(route.body),
      responses: withDefaults(declared),
    });
  }
  const schemas: Record<string, Schema> = { Error: ERROR_SCHEMA };
  const sorted = Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b)));
  return {
    openapi: "3.1.0",
    info: { title: "Spar", version, description: DESCRIPTION },
    servers: [{ url: "/" }],
    security: [{ signature: [] }, {}],
    paths: hoistNamed(sorted, schemas) as OpenApiDocument["paths"],
    components: {
      schemas: Object.fromEntries(Object.entries(schemas).sort(([a], [b]) => a.localeCompare(b))),
      responses: {
        Error: {
          description: "An error, with its code from Spar's catalog; the HTTP status follows from the code.",
          content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
        },
      },
      securitySchemes: { signature: SIGNATURE_SCHEME },
    },
  };
}

/**
 * A fastify or plugin path in OpenAPI's syntax, with the names of its path parameters:
 * `/fighters/:id` → `/fighters/{id}`; a plugin route's trailing `*` → `{rest}`.
 */
export function openApiPath(path: string): { path: string; params: string[] } {
  const params: string[] = [];
  const segments = path.split("/").map((segment) => {
    const name = segment.startsWith(":") ? segment.slice(1) : segment === "*" ? REST_PARAM : undefined;
    if (name === undefined) return segment;
    params.push(name);
    return `{${name}}`;
  });
  return { path: segments.join("/"), params };
}

const ERROR_RESPONSE_REF = { $ref: "#/components/responses/Error" };

/** A route with no response schema: its success is JSON, and the document does not guess its shape. */
const UNDESCRIBED_SUCCESS: Record<string, ResponseObject> = {
  "2XX": {
    description: "Success. The route declares no response schema; README.md (HTTP API) describes the answer.",
    content: { "application/json": {} },
  },
};

function servedOperation(route: ServedRoute, params: string[]): Operation {
  const schema = route.schema ?? {};
  const parameters = [
    ...pathParameters(params, schema.params as Schema | undefined),
    ...namedParameters("query", schema.querystring as Schema | undefined),
    ...namedParameters("header", schema.headers as Schema | undefined),
  ];
  const declared: Operation["responses"] = route.websocket
    ? {
        "101": {
          description:
            "Switching Protocols: send `Upgrade: websocket` and the connection becomes a WebSocket.",
        },
      }
    : declaredResponses((schema.response ?? {}) as Record<string, Schema>);
  return {
    ...named(schema),
    ...(schema.security ? { security: schema.security } : {}),
    ...withParameters(parameters),
    ...withBody((schema.documentedBody ?? schema.body) as Schema | undefined),
    responses: withDefaults(declared),
  };
}

/** What a route does not declare is said without guessing: some success, and the one error envelope. */
function withDefaults(declared: Operation["responses"]): Operation["responses"] {
  const statuses = Object.keys(declared);
  return {
    ...(statuses.some((s) => /^[123]/.test(s)) ? {} : UNDESCRIBED_SUCCESS),
    ...declared,
    // A route answering its own 4xx shape (the OpenAI-compatible ones) says so; a 503 of its own
    // (health) is not all its errors.
    ...(statuses.some((s) => /^(4|default$)/.test(s)) ? {} : { default: ERROR_RESPONSE_REF }),
  };
}

function named(route: { operationId?: string; summary?: string; description?: string }) {
  return {
    ...(route.operationId ? { operationId: route.operationId } : {}),
    ...(route.summary ? { summary: route.summary } : {}),
    ...(route.description ? { description: route.description } : {}),
  };
}

/** A schema's `title` that makes it a named record: `Fighter`, `GorillaRun`. */
const RECORD_TITLE = /^[A-Z][A-Za-z0-9]*$/;

/**
 * A copy of `node` where each schema titled like a record (`title: "Fighter"`) is a `$ref` to
 * `components.schemas.<title>`, which gets the schema (its own records referred to in turn), so a
 * generator makes one named type of it. The routes keep their schemas whole (fastify serialises
 * with them); only the document refers. Two different schemas under one title are an error.
 */
export function hoistNamed(node: unknown, schemas: Record<string, Schema>): unknown {
  if (Array.isArray(node)) return node.map((item) => hoistNamed(item, schemas));
  if (typeof node !== "object" || node === null) return node;
  const copy = Object.fromEntries(
    Object.entries(node).map(([key, value]) => [
      key,
      // `examples` and `enum`/`const` values are data, not schemas: they are kept as they are.
      key === "examples" || key === "example" || key === "enum" || key === "const"
        ? value
        : hoistNamed(value, schemas),
    ]),
  );
  const title = (node as Schema).title;
  if (typeof title !== "string" || !RECORD_TITLE.test(title) || !("type" in node || "anyOf" in node))
    return copy;
  const known = schemas[title];
  if (known !== undefined && JSON.stringify(known) !== JSON.stringify(copy)) {
    throw new Error(`two different schemas are titled ${title}`);
  }
  schemas[title] = copy;
  return { $ref: `#/components/schemas/${title}` };
}

function withParameters(parameters: Parameter[]): Pick<Operation, "parameters"> {
  return parameters.length > 0 ? { parameters } : {};
}

function withBody(body: Schema | undefined): Pick<Operation, "requestBody"> {
  return body ? { requestBody: { required: true, content: { "application/json": { schema: body } } } } : {};
}

/** Each `{name}` of the path, with its schema from the route's `params` schema when it has one. */
function pathParameters(names: string[], params?: Schema): Parameter[] {
  const properties = (params?.properties ?? {}) as Record<string, Schema>;
  return names.map((name) => ({
    name,
    in: "path",
    required: true,
    ...(name === REST_PARAM && !properties[name] ? { description: "the rest of the path" } : {}),
    schema: properties[name] ?? { type: "string" },
  }));
}

/** The properties of a route's `querystring` or `headers` schema, each a parameter. */
function namedParameters(where: "query" | "header", object?: Schema): Parameter[] {
  const properties = (object?.properties ?? {}) as Record<string, Schema>;
  const required = new Set((object?.required ?? []) as string[]);
  return Object.entries(properties).map(([name, schema]) => ({
    name,
    in: where,
    required: required.has(name),
    schema,
  }));
}

/**
 * A fastify `response` schema map in OpenAPI's terms. Fastify keys statuses as `200`, `2xx` or
 * `default`, each a JSON Schema or `{content: {<media type>: {schema}}}`; OpenAPI writes `2XX`.
 */
function declaredResponses(response: Record<string, Schema>): Record<string, ResponseObject> {
  return Object.fromEntries(
    Object.entries(response).map(([status, value]) => {
      const key = status === "default" ? status : status.toUpperCase();
      const description = typeof value.description === "string" ? value.description : `HTTP ${key}`;
      const content =
        typeof value.content === "object" && value.content !== null
          ? (value.content as ResponseObject["content"])
          : { "application/json": { schema: value } };
      // `content: {}` (a 204): no body at all.
      return [key, Object.keys(content ?? {}).length > 0 ? { description, content } : { description }];
    }),
  );
}
