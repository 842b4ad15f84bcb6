/**
 * The rest of the middleware stack: CORS (foreign origins denied unless configured), gzip for larger
 * responses, API rate limiting per signing key or peer, security headers, and one log line per
 * request (method, path without query, status, time, peer, key: never a body or a secret).
 */
import compress from "@fastify/compress";
import cors from "@fastify/cors";
import rateLimit from "@fastify/rate-limit";
import type { FastifyInstance } from "fastify";
import { type Logger, type SparConfig, SparError } from "../../kernel/sdk.js";

export const SECURITY_HEADERS: Record<string, string> = {
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "content-security-policy": "default-src 'none'; frame-ancestors 'none'",
  "cross-origin-resource-policy": "same-origin",
  "cache-control": "no-store",
};

/** Registered before the security hooks, so CORS answers preflights and the limiter knows the key. */
export function registerCors(app: FastifyInstance, config: Readonly<SparConfig>): void {
  const allowed = new Set(config.api.cors_origins.map((o) => o.toLowerCase()));
  app.register(cors, {
    origin: (origin, done) => done(null, origin !== undefined && allowed.has(origin.toLowerCase())),
    methods: ["GET", "POST", "PUT", "DELETE"],
    allowedHeaders: ["content-type", "content-digest", "signature", "signature-input"],
  });
}

export function registerMiddleware(app: FastifyInstance, config: Readonly<SparConfig>, log: Logger): void {
  app.register(compress, { global: true, threshold: 1024, encodings: ["gzip"] });
  app.register(rateLimit, {
    max: config.api.rate_limit_per_minute,
    timeWindow: 60_000,
    // After authentication (onRequest), so a signed client is limited by its key wherever it comes from.
    hook: "preHandler",
    keyGenerator: (request) => (request.sparKeyId ? `key:${request.sparKeyId}` : `peer:${request.ip}`),
    errorResponseBuilder: (_request, context) =>
      new SparError(
        "RATE_LIMITED",
        `too many requests: at most ${context.max} a minute; retry in ${Math.ceil(context.ttl / 1000)} s`,
        {
          retry_after_s: Math.ceil(context.ttl / 1000),
        },
      ),
  });

  app.addHook("onSend", async (request, reply) => {
    reply.headers(SECURITY_HEADERS);
    reply.header("x-request-id", request.id);
  });

  app.addHook("onResponse", async (request, reply) => {
    log.info("request", {
      id: request.id,
      method: request.method,
      path: request.url.split("?")[0],
      status: reply.statusCode,
      ms: Number(reply.elapsedTime.toFixed(1)),
      peer: request.ip,
      ...(request.sparKeyId ? { key: request.sparKeyId } : {}),
    });
  });
}
