import { randomUUID } from "node:crypto";
import Fastify, { type FastifyInstance, type FastifyReply } from "fastify";
import type { FastifyValidationResult } from "fastify/types/schema.js";
import type { EventBus, Logger, PluginData, RingServices } from "../../sdk/index.js";
import { validatorFor } from "../../sdk/index.js";
import { formatScope } from "../../sdk/kits/http.js";
import { allowances, registerAccess } from "./access.js";
import { canonicalApiUrl } from "./api-alias.js";
import { guardConnections, serverTimeouts } from "./connections.js";
import { answerClientError, createErrorHandler, envelope, toSparError } from "./errors.js";
import { compileSerializersLazily } from "./lazy-serializers.js";
import { registerCors, registerMiddleware } from "./middleware.js";
import { openAiRoutes } from "./openai-compat.js";
import { registerOpenApi } from "./openapi.js";
import { limitBody, MAX_ROUTE_BODY_BYTES, type PluginRoutes, runPluginRoute } from "./plugin-routes.js";
import { notFound, serveAsset, servesAsset } from "./public-assets.js";
import { createRateLimiter } from "./rate-limit.js";
import { RESPONSES } from "./route-schemas.js";
import { fighterRoutes } from "./routes.js";
import { registerSecurity } from "./security.js";
import type { ArenaSettings } from "./settings.js";
import { acceptTraceContext } from "./trace-context.js";
import { usageRoutes } from "./usage-route.js";
import { registerWebSocket } from "./ws.js";
import { createTicketBook } from "./ws-tickets.js";

/** Builds the Arena's fastify instance (not yet listening); plugins' routes are matched in `routes`. */
export function buildServer(
  ring: RingServices,
  events: EventBus,
  config: Readonly<ArenaSettings>,
  log: Logger,
  routes: PluginRoutes,
  /** The Arena's own collections: each OpenAI `user`'s bout (openai-bouts.ts). */
  data: PluginData,
): FastifyInstance {
  const app = Fastify({
    logger: false,
    // Request ids are ours: an incoming x-request-id is not trusted into the logs.
    genReqId: () => randomUUID(),
    requestIdHeader: false,
    bodyLimit: config.api.body_limit_bytes,
    forceCloseConnections: true,
    return503OnClosing: true,
    ...serverTimeouts(config.api),
    // Long ids reach the routes, whose schemas refuse them in the catalog's words. A router option,
    // so under routerOptions: fastify 5 warns (FSTDEP022) at every start when it is set at the top.
    routerOptions: { maxParamLength: 1000 },
    // A URL fastify cannot even route (a bad %-escape) still gets the one error shape.
    frameworkErrors: (error, _request, reply) => {
      const spar = toSparError(error);
      (reply as FastifyReply).status(spar.status).send(envelope(spar));
    },
    clientErrorHandler: answerClientError,
    // `/api/...` is served as `/api/v1/...`: every route is registered once (api-alias.ts).
    rewriteUrl: (request) => canonicalApiUrl(request.url ?? "/"),
  });
  compileSerializersLazily(app);
  // First, so it sees every route registered after it: the OpenAPI document is made of them.
  registerOpenApi(app, routes, ring.version);
  acceptTraceContext(app);
  // JSON only: a text/plain body (what a cross-site form can send) is 415, not a string.
  app.removeContentTypeParser("text/plain");
  // Past max_connections (or a peer's share) new connections are closed on arrival; idle ones time out.
  guardConnections(app.server, config.api, true);
  // The kernel's validator: unknown fields are refused, never stripped, and types never coerced, as
  // for config and manifests. Compiled on a route's first request, not at start.
  app.setValidatorCompiler(({ schema }) => lazyValidator(schema));
  app.setErrorHandler(createErrorHandler(log));
  app.setNotFoundHandler((request, reply) => {
    reply.status(404).send(envelope(notFound(request)));
  });
  const limiter = createRateLimiter({ max: config.api.rate_limit_per_minute, windowMs: 60_000 });
  app.addHook("onClose", async () => limiter.close());
  registerCors(app, config);
  const tickets = createTicketBook();
  registerSecurity(app, ring, config, limiter, (path) => servesAsset(routes, path), tickets);
  // After the signature's checks: a refused request has still spent its nonce.
  registerAccess(app, ring, routes);
  registerMiddleware(app, log);
  registerWebSocket(app, ring, events, {
    limiter,
    maxPerPeer: config.api.websocket_max_per_peer,
    maxTotal: config.api.websocket_max_total,
  });
  // A browser cannot sign a WebSocket upgrade: a signed client asks for a one-use ticket first.
  app.post(
    "/api/v1/ws/ticket",
    {
      schema: {
        operationId: "issueWsTicket",
        summary: "A one-use ticket to open the WebSocket with (for clients that cannot sign it)",
        response: RESPONSES.issueWsTicket,
      },
    },
    async (request) => tickets.issue(request.sparKeyId),
  );
  // Who the caller is and what it may do: the dashboard shows and hides its views by it.
  const keySchema = {
    operationId: "getKey",
    summary: "Who the caller is and what it may do",
    response: RESPONSES.getKey,
  };
  app.get("/api/v1/key", { schema: keySchema }, async (request) => {
    const scope = request.sparScope ?? { kind: "admin" };
    return {
      key: request.sparKeyId ?? null,
      scope: formatScope(scope),
      fighters: scope.kind === "chat" ? scope.fighters : null,
      may: allowances(scope),
    };
  });
  app.register(fighterRoutes(ring), { prefix: "/api/v1" });
  app.register(usageRoutes(ring), { prefix: "/api/v1" });
  // OpenAI's API shape, so any OpenAI client can talk to a fighter (`model` names it).
  app.register(openAiRoutes(ring, log, data), { prefix: "/v1" });
  // What no route of the Arena's own answers may be a plugin's: matched when the daemon is ready.
  const methods = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;
  app.route({
    method: [...methods],
    url: "/api/*",
    // A plugin's route may take more than the API's limit (bodyLimit): each is held to its own here.
    bodyLimit: Math.max(config.api.body_limit_bytes, MAX_ROUTE_BODY_BYTES),
    preParsing: async (request, _reply, payload) => {
      const found = routes.find("api", request.method, request.originalUrl.split("?")[0] ?? "");
      const limit = found?.route.bodyLimit ?? config.api.body_limit_bytes;
      return limitBody(payload, request.headers["content-length"], limit);
    },
    handler: async (request, reply) => {
      const found = routes.find("api", request.method, request.originalUrl.split("?")[0] ?? "");
      if (!found) throw notFound(request);
      return runPluginRoute(found, request, reply);
    },
  });
  app.route({
    method: ["GET", "HEAD"],
    url: "/*",
    handler: async (request, reply) => serveAsset(routes, request, reply),
  });
  return app;
}

/** A validator compiled the first time it is called; fastify reads `errors` off it after each call. */
function lazyValidator(schema: object): FastifyValidationResult {
  let compiled: ReturnType<typeof validatorFor> | undefined;
  const validate: FastifyValidationResult = (data: unknown): boolean => {
    compiled ??= validatorFor(schema);
    const ok = compiled(data) as boolean;
    validate.errors = compiled.errors;
    return ok;
  };
  return validate;
}
