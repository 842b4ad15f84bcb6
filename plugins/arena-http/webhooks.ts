/**
 * The webhook listener (`[channels] webhook_listen`, default 127.0.0.1:6661): a second server that
 * serves only the webhook routes plugins add, and nothing of the API. The tunnel points here, never
 * at the API. Each route's `verify` checks its platform's signature (Telegram's secret token,
 * Slack's HMAC, Discord's Ed25519) over the body exactly as received before anything else: a
 * delivery it refuses gets 401 and a counted log line, and its body is never parsed. It starts only
 * when some plugin adds a webhook route.
 */
import { randomUUID } from "node:crypto";
import Fastify, { type FastifyInstance } from "fastify";
import { findForbiddenKey, forbiddenKeyMessage, type Logger, SparError } from "../../sdk/index.js";
import { guardConnections, serverTimeouts } from "./connections.js";
import { answerClientError, createErrorHandler, echo, envelope } from "./errors.js";
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
    ...serverTimeouts(settings.api),
    clientErrorHandler: answerClientError,
  });
  // The same limits as the API: it faces the internet through the tunnel.
  guardConnections(app.server, settings.api, false);
  app.setErrorHandler(createErrorHandler(log));
  app.setNotFoundHandler((request, reply) => {
    const path = echo(request.url.split("?")[0] ?? "");
    const err = new SparError("NOT_FOUND", `no webhook at ${request.method} ${path}`);
    reply.status(err.status).send(envelope(err));
  });
  // Every body is kept as received and parsed only once the route's `verify` has passed it.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "buffer" }, (request, body, done) => {
    request.webhookBody = body as Buffer;
    done(null, undefined);
  });
  /** Deliveries each route refused: counted in the log line, so a flood of forgeries shows. */
  const refused = new Map<string, number>();
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
      const path = request.url.split("?")[0] ?? "";
      const found = routes.find("webhook", request.method, path);
      if (!found) throw new SparError("NOT_FOUND", `no webhook at ${request.method} ${path}`);
      const rawBody = request.webhookBody ?? Buffer.alloc(0);
      const delivery = { path, headers: request.headers, rawBody, ip: request.ip };
      if (!(await found.route.verify?.(delivery))) {
        const count = (refused.get(found.route.path) ?? 0) + 1;
        refused.set(found.route.path, count);
        log.warn("webhook refused: bad or missing signature", { path, peer: request.ip, refused: count });
        throw new SparError("UNAUTHORIZED", "the delivery's signature is missing or does not match");
      }
      return runPluginRoute(
        found,
        Object.assign(request, { rawBody, body: parseBody(request, rawBody) }),
        reply,
      );
    },
  });
  return app;
}

/** A verified delivery's JSON body (undefined when it is not JSON), prototype keys refused. */
function parseBody(
  request: { headers: Record<string, string | string[] | undefined> },
  raw: Buffer,
): unknown {
  if (!/json/i.test(String(request.headers["content-type"] ?? "")) || raw.length === 0) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(raw.toString("utf8"));
  } catch (err) {
    throw new SparError("VALIDATION_FAILED", `the body is not valid JSON: ${(err as Error).message}`);
  }
  const forbidden = findForbiddenKey(value);
  if (forbidden) throw new SparError("VALIDATION_FAILED", forbiddenKeyMessage(forbidden, "body"));
  return value;
}
