/**
 * The rest of the middleware stack: CORS (foreign origins denied unless configured), gzip for larger
 * responses, security headers, and one log line per request (method, path without query, status,
 * time, peer, key: never a body or a secret). Rate limiting sits with authentication (security.ts).
 */
import cors from "@fastify/cors";
import type { FastifyInstance } from "fastify";
import type { Logger } from "../../sdk/index.js";
import { registerGzip } from "./gzip.js";
import type { ArenaSettings } from "./settings.js";

export const SECURITY_HEADERS: Record<string, string> = {
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "content-security-policy": "default-src 'none'; frame-ancestors 'none'",
  "cross-origin-resource-policy": "same-origin",
  "cache-control": "no-store",
};

/** Registered before the security hooks, so CORS answers preflights and the limiter knows the key. */
export function registerCors(app: FastifyInstance, config: Readonly<ArenaSettings>): void {
  const allowed = new Set(config.api.cors_origins.map((o) => o.toLowerCase()));
  app.register(cors, {
    origin: (origin, done) => done(null, origin !== undefined && allowed.has(origin.toLowerCase())),
    methods: ["GET", "POST", "PUT", "PATCH", "DELETE"],
    allowedHeaders: ["content-type", "content-digest", "signature", "signature-input", "idempotency-key"],
  });
}

export function registerMiddleware(app: FastifyInstance, log: Logger): void {
  registerGzip(app, 1024);
  app.addHook("onSend", async (request, reply) => {
    // A public asset carries its own policy (public-assets.ts); everything else gets none at all.
    const assetPolicy = reply.getHeader("x-spar-csp");
    reply.headers(SECURITY_HEADERS);
    if (typeof assetPolicy === "string") {
      reply.removeHeader("x-spar-csp");
      reply.header("content-security-policy", assetPolicy);
      reply.header("cache-control", "no-cache");
    }
    reply.header("x-request-id", request.id);
  });

  app.addHook("onResponse", async (request, reply) => {
    // A refused request is a warning and a failed one an error, so `spar logs --level warn` finds them.
    const level = reply.statusCode >= 500 ? "error" : reply.statusCode >= 400 ? "warn" : "info";
    log[level]("request", {
      req_id: request.id,
      method: request.method,
      path: request.originalUrl.split("?")[0],
      status: reply.statusCode,
      ms: Number(reply.elapsedTime.toFixed(1)),
      peer: request.ip,
      ...(request.sparKeyId ? { key: request.sparKeyId } : {}),
    });
  });
}
