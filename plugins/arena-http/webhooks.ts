/**
 * The webhook listener (`[channels] webhook_listen`, default 127.0.0.1:6661): a second server that
 * serves only the webhook routes plugins add, and nothing of the API. The tunnel points here, never
 * at the API. It checks no signature itself: each route verifies its platform's (Telegram's secret
 * token, Slack's HMAC, Discord's Ed25519) over the body exactly as received, which it gets as
 * `rawBody`. It starts only when some plugin adds a webhook route.
 */
import { randomUUID } from "node:crypto";
import Fastify, { type FastifyInstance } from "fastify";
import { findForbiddenKey, forbiddenKeyMessage, type Logger, SparError } from "../../kernel/sdk.js";
import { createErrorHandler } from "./errors.js";
import { SECURITY_HEADERS } from "./middleware.js";
import { type PluginRoutes, runPluginRoute } from "./plugin-routes.js";
import { createRateLimiter } from "./rate-limit.js";
import type { ArenaSettings } from "./settings.js";

declare module "fastify" {
  interface FastifyRequest {
    webhookBody?: Buffer;
  }
}

export function buildWebhookServer(
  routes: PluginRoutes,
  settings: Readonly<ArenaSettings>,
  log: Logger,
): FastifyInstance {
  const app = Fastify({
    logger: false,
    genReqId: () => randomUUID(),
    requestIdHeader: false,
    bodyLimit: settings.api.body_limit_bytes,
    forceCloseConnections: true,
  });
  app.setErrorHandler(createErrorHandler(log));
  app.setNotFoundHandler((request, reply) => {
    const err = new SparError("NOT_FOUND", `no webhook at ${request.method} ${request.url.split("?")[0]}`);
    reply.status(err.status).send(err.toJSON());
  });
  // Every body is kept as received; JSON is parsed as well, with prototype keys refused.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "buffer" }, (request, body, done) => {
    const raw = body as Buffer;
    request.webhookBody = raw;
    if (!/json/i.test(request.headers["content-type"] ?? "") || raw.length === 0)
      return done(null, undefined);
    try {
      const value: unknown = JSON.parse(raw.toString("utf8"));
      const forbidden = findForbiddenKey(value);
      if (forbidden)
        return done(new SparError("VALIDATION_FAILED", forbiddenKeyMessage(forbidden, "body")), undefined);
      done(null, value);
    } catch (err) {
      done(
        new SparError("VALIDATION_FAILED", `the body is not valid JSON: ${(err as Error).message}`),
        undefined,
      );
    }
  });
  // Platforms retry; a flood from one address is still bounded.
  const limiter = createRateLimiter({ max: settings.api.rate_limit_per_minute, windowMs: 60_000 });
  app.addHook("onClose", async () => limiter.close());
  app.addHook("onRequest", async (request) => {
    const admitted = limiter.take(`peer:${request.ip}`);
    if (!admitted.ok) {
      throw new SparError("RATE_LIMITED", `too many requests; retry in ${admitted.retryAfterS} s`, {
        retry_after_s: admitted.retryAfterS,
      });
    }
  });
  app.addHook("onSend", async (request, reply) => {
    reply.headers(SECURITY_HEADERS);
    reply.header("x-request-id", request.id);
  });
  app.addHook("onResponse", async (request, reply) => {
    log.info("webhook", {
      id: request.id,
      method: request.method,
      path: request.url.split("?")[0],
      status: reply.statusCode,
      peer: request.ip,
    });
  });
  app.route({
    method: ["GET", "POST", "PUT", "DELETE"],
    url: "/*",
    handler: async (request, reply) => {
      const found = routes.find("webhook", request.method, request.url.split("?")[0] ?? "");
      if (!found)
        throw new SparError("NOT_FOUND", `no webhook at ${request.method} ${request.url.split("?")[0]}`);
      return runPluginRoute(found, Object.assign(request, { rawBody: request.webhookBody }), reply);
    },
  });
  return app;
}
