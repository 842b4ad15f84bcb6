import { randomUUID } from "node:crypto";
import Fastify, { type FastifyInstance } from "fastify";
import type { EventBus, Logger, RingServices, SparConfig } from "../../kernel/sdk.js";
import { SparError, validatorFor } from "../../kernel/sdk.js";
import { createErrorHandler } from "./errors.js";
import { registerCors, registerMiddleware } from "./middleware.js";
import { createRateLimiter } from "./rate-limit.js";
import { fighterRoutes } from "./routes.js";
import { registerSecurity } from "./security.js";
import { registerWebSocket } from "./ws.js";

/** Builds the Arena's fastify instance (not yet listening). */
export function buildServer(
  ring: RingServices,
  events: EventBus,
  config: Readonly<SparConfig>,
  log: Logger,
): FastifyInstance {
  const app = Fastify({
    logger: false,
    // Request ids are ours: an incoming x-request-id is not trusted into the logs.
    genReqId: () => randomUUID(),
    requestIdHeader: false,
    bodyLimit: config.api.body_limit_bytes,
    forceCloseConnections: true,
    return503OnClosing: true,
  });
  // Past this many open connections Node closes new ones on arrival, so memory stays bounded.
  app.server.maxConnections = config.api.max_connections;
  // The kernel's validator: unknown fields are refused, never stripped, and types never coerced, as
  // for config and manifests. One Ajv instance for everything also keeps start-up short.
  app.setValidatorCompiler(({ schema }) => validatorFor(schema));
  app.setErrorHandler(createErrorHandler(log));
  app.setNotFoundHandler((request, reply) => {
    const err = new SparError("NOT_FOUND", `no route ${request.method} ${request.url.split("?")[0]}`);
    reply.status(err.status).send(err.toJSON());
  });
  const limiter = createRateLimiter({ max: config.api.rate_limit_per_minute, windowMs: 60_000 });
  app.addHook("onClose", async () => limiter.close());
  registerCors(app, config);
  registerSecurity(app, ring, config, limiter);
  registerMiddleware(app, log);
  registerWebSocket(app, ring, events, {
    limiter,
    maxPerPeer: config.api.websocket_max_per_peer,
    maxTotal: config.api.websocket_max_total,
  });
  const routes = fighterRoutes(ring);
  app.register(routes, { prefix: "/api/v1" });
  app.register(routes, { prefix: "/api" });
  return app;
}
