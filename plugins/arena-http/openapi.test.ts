/**
 * The OpenAPI generator on a real fastify app with the real plugin-route registry: which routes it
 * keeps (HEAD twins, catch-alls and webhooks left out; `/api` reaches `/api/v1` by the rewrite), how
 * paths, parameters, bodies and responses are written, and what a plugin's route looks like beside
 * the Arena's own.
 */

import { SerializerSelector } from "@fastify/fast-json-stringify-compiler";
import websocket from "@fastify/websocket";
import Fastify, { type FastifyInstance } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { addGorillaRoutes } from "../../lib/gorillas/routes.js";
import { ERROR_CATALOG } from "../../sdk/index.js";
import { installRoutes } from "../moves-skills/install-routes.js";
import { lockRoutes } from "../moves-skills/lock-routes.js";
import { addApprovalRoutes } from "../policy-approvals/routes.js";
import { addBudgetRoutes } from "../policy-budgets/routes.js";
import { addTroopRoutes } from "../troops-local/routes.js";
import { canonicalApiUrl } from "./api-alias.js";
import { type OpenApiDocument, openApiPath, registerOpenApi } from "./openapi.js";
import { createPluginRoutes, type PluginRoutes } from "./plugin-routes.js";
import { buildServer } from "./server.js";

const thingBody = {
  type: "object",
  additionalProperties: false,
  required: ["name"],
  properties: { name: { type: "string", minLength: 1 } },
};
const idParams = { type: "object", properties: { id: { type: "string", maxLength: 200 } } };
const otherError = {
  type: "object",
  required: ["error"],
  properties: { error: { type: "object", properties: { type: { type: "string" } } } },
};
const ok = async () => ({ ok: true });

let app: FastifyInstance;
afterEach(() => app?.close());

/** An app laid out like the Arena's: the generator first, routes under `/api/v1` (`/api` rewritten to it), catch-alls. */
async function arenaLike(plugins: PluginRoutes): Promise<FastifyInstance> {
  app = Fastify({ rewriteUrl: (request) => canonicalApiUrl(request.url ?? "/") });
  registerOpenApi(app, plugins, "1.2.3");
  const core = async (scope: FastifyInstance) => {
    scope.get(
      "/things",
      {
        schema: {
          querystring: {
            type: "object",
            required: ["q"],
            properties: { q: { type: "string" }, limit: { type: "integer" } },
          },
        },
      },
      ok,
    );
    scope.post(
      "/things",
      {
        schema: {
          body: thingBody,
          response: { 201: { type: "object", description: "the thing" } },
        },
      },
      ok,
    );
    scope.get("/things/:id", { schema: { params: idParams } }, ok);
    // A route that answers errors in an envelope of its own, as the OpenAI-compatible routes do.
    scope.get(
      "/things/:id/history",
      {
        schema: {
          headers: { type: "object", properties: { "x-page": { type: "string", description: "a cursor" } } },
          response: {
            "4xx": otherError,
            "5xx": {
              description: "the server failed",
              content: { "application/json": { schema: otherError } },
            },
          },
        },
      },
      ok,
    );
    scope.delete("/things/:id/owners/:owner", ok);
  };
  app.register(core, { prefix: "/api/v1" });
  app.route({ method: ["GET", "POST"], url: "/api/*", handler: ok });
  app.route({ method: ["GET", "HEAD"], url: "/*", handler: ok });
  await app.ready();
  return app;
}

async function documentOf(server: FastifyInstance, url = "/api/v1/openapi.json"): Promise<OpenApiDocument> {
  const response = await server.inject(url);
  expect(response.statusCode).toBe(200);
  return response.json() as OpenApiDocument;
}

describe("the OpenAPI document", () => {
  it("lists each route once, in OpenAPI's syntax, and nothing fastify adds around them", async () => {
    const doc = await documentOf(await arenaLike(createPluginRoutes()));
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.info.version).toBe("1.2.3");
    expect(doc.servers).toEqual([{ url: "/" }]);
    expect(Object.keys(doc.paths)).toEqual([
      "/api/v1/openapi.json",
      "/api/v1/things",
      "/api/v1/things/{id}",
      "/api/v1/things/{id}/history",
      "/api/v1/things/{id}/owners/{owner}",
    ]);
    // No HEAD twin of any GET, and the aliases are named once, in the description.
    expect(Object.keys(doc.paths["/api/v1/things"] ?? {})).toEqual(["get", "post"]);
    expect(doc.info.description).toContain("also served under `/api/...`");
    expect(doc.info.description).toMatch(/webhook listener's routes .* public assets/);
  });

  it("is served under /api too, the same document", async () => {
    const server = await arenaLike(createPluginRoutes());
    expect(await documentOf(server, "/api/openapi.json")).toEqual(await documentOf(server));
  });

  it("declares path parameters from the route's params schema, else as strings, and query parameters", async () => {
    const { paths } = await documentOf(await arenaLike(createPluginRoutes()));
    expect(paths["/api/v1/things/{id}"]?.get?.parameters).toEqual([
      { name: "id", in: "path", required: true, schema: { type: "string", maxLength: 200 } },
    ]);
    expect(
      paths["/api/v1/things/{id}/owners/{owner}"]?.delete?.parameters?.map((p) => [p.name, p.schema]),
    ).toEqual([
      ["id", { type: "string" }],
      ["owner", { type: "string" }],
    ]);
    expect(paths["/api/v1/things"]?.get?.parameters).toEqual([
      { name: "q", in: "query", required: true, schema: { type: "string" } },
      { name: "limit", in: "query", required: false, schema: { type: "integer" } },
    ]);
  });

  it("gives a body's schema as the route validates it, and a route's own response schemas", async () => {
    const post = (await documentOf(await arenaLike(createPluginRoutes()))).paths["/api/v1/things"]?.post;
    expect(post?.requestBody).toEqual({
      required: true,
      content: { "application/json": { schema: thingBody } },
    });
    expect(post?.responses).toEqual({
      "201": {
        description: "the thing",
        content: { "application/json": { schema: { type: "object", description: "the thing" } } },
      },
      default: { $ref: "#/components/responses/Error" },
    });
  });

  it("takes a route's own error responses instead of the envelope, and its header parameters", async () => {
    const get = (await documentOf(await arenaLike(createPluginRoutes()))).paths["/api/v1/things/{id}/history"]
      ?.get;
    expect(get?.responses).toEqual({
      "2XX": expect.objectContaining({ content: { "application/json": {} } }),
      "4XX": { description: "HTTP 4XX", content: { "application/json": { schema: otherError } } },
      "5XX": { description: "the server failed", content: { "application/json": { schema: otherError } } },
    });
    expect(get?.parameters?.[1]).toEqual({
      name: "x-page",
      in: "header",
      required: false,
      schema: { type: "string", description: "a cursor" },
    });
  });

  it("invents no answer for a route without a response schema, and refers every error to the one envelope", async () => {
    const doc = await documentOf(await arenaLike(createPluginRoutes()));
    const responses = doc.paths["/api/v1/things/{id}"]?.get?.responses;
    expect(responses?.["2XX"]).toEqual({
      description: expect.stringContaining("declares no response schema"),
      content: { "application/json": {} },
    });
    expect(responses?.default).toEqual({ $ref: "#/components/responses/Error" });
    expect(doc.components.responses.Error?.content?.["application/json"]?.schema).toEqual({
      $ref: "#/components/schemas/Error",
    });
    const error = doc.components.schemas.Error as {
      properties: { error: { properties: { code: { enum: string[] } } } };
    };
    expect(error.properties.error.properties.code.enum).toEqual(Object.keys(ERROR_CATALOG));
  });

  it("adds plugins' api routes with their body schema, and leaves out webhooks, assets and routes the Arena answers itself", async () => {
    const plugins = createPluginRoutes();
    const server = await arenaLike(plugins);
    // As in the daemon: plugin routes arrive once the app is compiled, before the first request.
    const handler = async () => ({ body: null });
    plugins.add({
      listener: "api",
      method: "PUT",
      path: "/api/v1/things/:id/label",
      body: thingBody,
      handler,
    });
    plugins.add({ listener: "api", method: "GET", path: "/api/v1/things/:id", handler });
    plugins.add({ listener: "api", method: "GET", path: "/api/v1/files/*", handler });
    plugins.add({ listener: "webhook", method: "POST", path: "/hooks/chat", verify: () => true, handler });
    plugins.add({ listener: "public", prefix: "/dashboard", dir: "/nonexistent" });
    const { paths } = await documentOf(server);
    expect(paths["/api/v1/things/{id}/label"]?.put).toEqual({
      parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }],
      requestBody: { required: true, content: { "application/json": { schema: thingBody } } },
      responses: {
        "2XX": expect.objectContaining({ content: { "application/json": {} } }),
        default: { $ref: "#/components/responses/Error" },
      },
    });
    // The Arena's own GET /things/:id answers that path: its operation (with its params schema) stays.
    expect(paths["/api/v1/things/{id}"]?.get?.parameters?.[0]?.schema).toEqual(idParams.properties.id);
    expect(paths["/api/v1/files/{rest}"]?.get?.parameters).toEqual([
      {
        name: "rest",
        in: "path",
        required: true,
        description: "the rest of the path",
        schema: { type: "string" },
      },
    ]);
    expect(Object.keys(paths).filter((p) => !p.startsWith("/api/v1/"))).toEqual([]);
  });

  it("takes a plugin route's params schema for its path parameters", async () => {
    const plugins = createPluginRoutes();
    const server = await arenaLike(plugins);
    plugins.add({
      listener: "api",
      method: "GET",
      path: "/api/v1/things/:id/notes",
      params: idParams,
      handler: async () => ({ body: null }),
    });
    const { paths } = await documentOf(server);
    expect(paths["/api/v1/things/{id}/notes"]?.get?.parameters).toEqual([
      { name: "id", in: "path", required: true, schema: idParams.properties.id },
    ]);
  });

  it("names a prefix's own route once, without its HEAD twins, and leaves out hidden routes", async () => {
    app = Fastify();
    registerOpenApi(app, createPluginRoutes(), "1.2.3");
    app.register(
      async (scope) => {
        scope.get("/", ok);
        scope.route({ method: ["POST", "PUT"], url: "/refused", schema: { hide: true }, handler: ok });
      },
      { prefix: "/v2" },
    );
    await app.ready();
    const { paths } = await documentOf(app);
    expect(Object.keys(paths)).toEqual(["/api/v1/openapi.json", "/v2"]);
    expect(Object.keys(paths["/v2"] ?? {})).toEqual(["get"]);
  });

  it("says a WebSocket route switches protocols", async () => {
    app = Fastify();
    registerOpenApi(app, createPluginRoutes(), "1.2.3");
    await app.register(websocket);
    app.route({ method: "GET", url: "/api/v1/ws", handler: ok, wsHandler: (socket) => socket.close() });
    await app.ready();
    expect((await documentOf(app)).paths["/api/v1/ws"]?.get?.responses).toEqual({
      "101": { description: expect.stringContaining("Upgrade: websocket") },
      default: { $ref: "#/components/responses/Error" },
    });
  });

  it("documents the signature scheme by its real header, pointing at the README", async () => {
    const doc = await documentOf(await arenaLike(createPluginRoutes()));
    expect(doc.security).toEqual([{ signature: [] }, {}]);
    expect(doc.components.securitySchemes.signature).toMatchObject({
      type: "apiKey",
      in: "header",
      name: "Signature",
    });
    expect(doc.components.securitySchemes.signature?.description).toMatch(
      /Signature-Input.*Content-Digest.*README\.md, "Signing requests from other clients"/s,
    );
  });
});

describe("openApiPath", () => {
  it.each([
    ["/api/v1/fighters", "/api/v1/fighters", []],
    ["/api/v1/fighters/:id", "/api/v1/fighters/{id}", ["id"]],
    [
      "/api/v1/fighters/:id/message-to/:target",
      "/api/v1/fighters/{id}/message-to/{target}",
      ["id", "target"],
    ],
    ["/api/v1/files/*", "/api/v1/files/{rest}", ["rest"]],
  ])("%s → %s", (from, path, params) => {
    expect(openApiPath(from)).toEqual({ path, params });
  });
});

/**
 * The Arena as the daemon builds it (buildServer), with the plugin routes whose adders are their own
 * modules: every operation there must be named, summarised and say what it answers, so a route
 * added without them fails here. (The routes plugins add from their index, and the served document
 * as a whole, are checked the same way in test/e2e/openapi.test.ts.)
 */
describe("the document of the Arena's real routes", () => {
  it("gives every operation a unique operationId, a summary and a schema for its success", async () => {
    const routes = createPluginRoutes();
    const unused = new Proxy({}, { get: () => () => Promise.resolve(undefined) }) as never;
    const ring = new Proxy(
      { version: "1.2.3" },
      {
        get: (target, name) => (name === "version" ? target.version : unused),
      },
    ) as never;
    const settings = {
      api: {
        body_limit_bytes: 1_000_000,
        rate_limit_per_minute: 600,
        cors_origins: [],
        max_connections: 100,
        websocket_max_per_peer: 10,
        websocket_max_total: 100,
        max_connections_per_peer: 50,
        idle_timeout_ms: 60_000,
        headers_timeout_ms: 10_000,
        request_timeout_ms: 60_000,
        keep_alive_timeout_ms: 5_000,
      },
      auth: { allow_unsigned_loopback: true },
      channels: { webhook_listen: "127.0.0.1:0" },
    };
    const log = { debug() {}, info() {}, warn() {}, error() {} } as never;
    app = buildServer(ring, unused, settings, log, routes, unused);
    addGorillaRoutes(routes, unused);
    addTroopRoutes(routes, unused);
    addApprovalRoutes(routes, { records: unused, settings: { rules: [] } as never, events: unused });
    addBudgetRoutes(routes, unused);
    const skills = {
      home: "/nowhere",
      settings: unused,
      events: unused,
      log,
      reload() {},
      skills: unused,
      moves: unused,
    };
    installRoutes(routes, skills as never);
    lockRoutes(routes, skills as never);
    await app.ready();
    const res = await app.inject({ method: "GET", url: "/api/v1/openapi.json", remoteAddress: "127.0.0.1" });
    expect(res.statusCode, res.body).toBe(200);
    const doc = res.json<OpenApiDocument>();
    const operations = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.entries(item).map(([method, op]) => ({ key: `${method.toUpperCase()} ${path}`, op })),
    );
    expect(operations.length).toBeGreaterThan(50);
    const problems = operations.flatMap(({ key, op }) => {
      const success = Object.entries(op.responses).filter(([status]) => /^2/.test(status));
      const described = success.some(([status, response]) => {
        if (status === "204") return true;
        const content = (response as { content?: Record<string, { schema?: object }> }).content ?? {};
        return Object.values(content).some((c) => c.schema !== undefined && Object.keys(c.schema).length > 0);
      });
      return [
        ...(op.operationId ? [] : [`${key}: no operationId`]),
        ...(op.summary ? [] : [`${key}: no summary`]),
        ...(described || op.responses["101"] ? [] : [`${key}: no schema for a 2XX answer`]),
      ];
    });
    expect(problems).toEqual([]);
    // Answers' schemas compile when first sent (lazy-serializers.ts), not at start: each compiles here.
    const compile = SerializerSelector()({}, {});
    let compiled = 0;
    const broken = operations.flatMap(({ key, op }) =>
      Object.entries(op.responses).flatMap(([status, response]) => {
        const content = (response as { content?: Record<string, { schema?: object }> }).content ?? {};
        const schema = content["application/json"]?.schema;
        if (!schema) return [];
        try {
          const root = { ...schema, components: doc.components };
          compile({ schema: root, method: "GET", url: key, httpStatus: status });
          compiled += 1;
          return [];
        } catch (err) {
          return [`${key} ${status}: ${(err as Error).message}`];
        }
      }),
    );
    expect(broken).toEqual([]);
    expect(compiled).toBeGreaterThan(50);
    const ids = operations.map(({ op }) => op.operationId);
    expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
    for (const id of ids) expect(id).toMatch(/^[a-z][A-Za-z0-9]*$/);
    // The records are named types, the manifest the kernel's own schema.
    expect(Object.keys(doc.components.schemas)).toEqual(
      expect.arrayContaining([
        "Fighter",
        "FighterManifest",
        "Bout",
        "Message",
        "MessageReply",
        "Troop",
        "Gorilla",
      ]),
    );
    expect(doc.components.schemas.FighterManifest).toMatchObject({
      required: ["name", "description", "system_prompt"],
    });
    expect(doc.paths["/api/v1/health"]?.get?.security).toEqual([]);
  });
});
