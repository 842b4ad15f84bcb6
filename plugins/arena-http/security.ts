/**
 * Who may call the API (DESIGN §6), in the order that keeps each step cheap for an attacker to fail:
 * 1. onRequest: one Host header; a foreign Origin refused unless `[api] cors_origins` lists it; then
 *    either a signature (RFC 9421, Ed25519) checked against the authorized keys, or, when `[auth]
 *    allow_unsigned_loopback` is on, an unsigned request from this machine (loopback peer, a strict
 *    loopback Host, no forwarding header); then the rate limit, per key or per peer.
 * 2. preValidation: the body must match the signed Content-Digest, and only then is the nonce
 *    claimed, so a refused or tampered copy never burns the genuine request's nonce and a limited
 *    client never writes one.
 * Health is open, and says nothing but whether the daemon is up and its version.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { findForbiddenKey, forbiddenKeyMessage, type RingServices, SparError } from "../../sdk/index.js";
import {
  digestMatches,
  isLoopbackAddress,
  isLoopbackHostHeader,
  signatureKeyId,
  verifyRequest,
} from "../../sdk/kits/http.js";
import type { RateLimiter } from "./rate-limit.js";
import type { ArenaSettings } from "./settings.js";
import type { TicketBook } from "./ws-tickets.js";

/** `ignoreBOM` keeps a leading BOM, as the string parser did: the body stays byte for byte what was signed. */
const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

declare module "fastify" {
  interface FastifyRequest {
    /** The key that signed the request, when it was signed. */
    sparKeyId?: string;
    /** The verified signature's nonce and its expiry, claimed once the body is checked. */
    sparNonce?: { value: string; expiresAt: number };
    /** The body exactly as received, for the Content-Digest check. */
    rawBody?: string;
  }
}

const OPEN_PATHS = new Set(["/api/v1/health", "/api/health"]);
/** The WebSocket's paths: an upgrade there may carry a ticket instead of a signature (ws-tickets.ts). */
const SOCKET_PATHS = new Set(["/api/v1/ws", "/api/ws"]);
/** Headers a proxy adds: a request carrying one came through something else, not straight from here. */
const FORWARDING = new Set([
  "forwarded",
  "via",
  "x-real-ip",
  "cf-connecting-ip",
  "true-client-ip",
  "x-client-ip",
  "client-ip",
  "x-cluster-client-ip",
]);
/** A nonce is remembered for as long as a signature carrying it could still pass the age check. */
const MAX_AGE_S = 300;

function hasBody(request: FastifyRequest): boolean {
  const length = Number(request.headers["content-length"] ?? 0);
  return length > 0 || request.headers["transfer-encoding"] !== undefined;
}

function forwardingHeader(request: FastifyRequest): string | undefined {
  return Object.keys(request.headers).find((h) => FORWARDING.has(h) || h.startsWith("x-forwarded-"));
}

/** The limiter's key for a request: its signing key, else its peer address. */
export function clientOf(request: FastifyRequest): string {
  return request.sparKeyId ? `key:${request.sparKeyId}` : `peer:${request.ip}`;
}

/** The `ticket` query parameter of a request, when it has exactly one. */
function ticketOf(request: FastifyRequest): string | undefined {
  const ticket = (request.query as Record<string, unknown> | undefined)?.ticket;
  return typeof ticket === "string" && ticket !== "" ? ticket : undefined;
}

export function registerSecurity(
  app: FastifyInstance,
  ring: RingServices,
  config: Readonly<ArenaSettings>,
  limiter: RateLimiter,
  isPublicAsset: (path: string) => boolean,
  tickets: TicketBook,
): void {
  const allowedOrigins = new Set(config.api.cors_origins.map((o) => o.toLowerCase()));
  const sameOrigin = (origin: string, host: string | undefined) =>
    origin.toLowerCase() === `http://${host?.toLowerCase()}`;

  // Keep the body as received (the digest is over those bytes), and refuse prototype keys by name.
  app.addContentTypeParser("application/json", { parseAs: "buffer" }, (request, body, done) => {
    // Decoded strictly: invalid UTF-8 would otherwise become U+FFFD and be stored as a name or a message.
    let text: string;
    try {
      text = strictUtf8.decode(body as Buffer);
    } catch {
      return done(new SparError("VALIDATION_FAILED", "the body is not valid UTF-8"), undefined);
    }
    request.rawBody = text;
    if (text.trim() === "") {
      return done(new SparError("VALIDATION_FAILED", "the body is empty; send a JSON object"), undefined);
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      return done(
        new SparError("VALIDATION_FAILED", `the body is not valid JSON: ${(err as Error).message}`),
        undefined,
      );
    }
    const forbidden = findForbiddenKey(value);
    if (forbidden) {
      return done(
        new SparError("VALIDATION_FAILED", forbiddenKeyMessage(forbidden, "body"), {
          path: `/body${forbidden.path}`,
        }),
        undefined,
      );
    }
    done(null, value);
  });

  app.addHook("onRequest", async (request, reply) => {
    const hosts = request.raw.rawHeaders.filter((_, i) => i % 2 === 0 && /^host$/i.test(_)).length;
    if (hosts > 1) throw new SparError("VALIDATION_FAILED", "the request has more than one Host header");
    const origin = request.headers.origin;
    if (origin && !allowedOrigins.has(origin.toLowerCase()) && !sameOrigin(origin, request.headers.host)) {
      throw new SparError(
        "FORBIDDEN",
        `requests from ${origin} are not allowed; list it in [api] cors_origins to allow it`,
      );
    }
    // A signature, wherever it is sent, must be good: a signed health check proves the key works.
    if (request.headers["signature-input"] !== undefined || request.headers.signature !== undefined) {
      await authenticateSigned(request);
    } else if (OPEN_PATHS.has(request.originalUrl.split("?")[0] ?? "")) {
      return;
    } else if (
      request.method === "GET" &&
      SOCKET_PATHS.has(request.originalUrl.split("?")[0] ?? "") &&
      ticketOf(request)
    ) {
      const redeemed = tickets.redeem(ticketOf(request) as string);
      if (!redeemed) {
        throw new SparError(
          "UNAUTHORIZED",
          "WebSocket ticket refused: it is unknown, used or expired; ask for a new one (POST /api/v1/ws/ticket)",
        );
      }
      // A ticket of an unsigned loopback client is only as good as unsigned access still is, and a
      // key's is only as good as the key: removed, it opens nothing; rescoped, the new scope holds.
      if (redeemed.keyId === undefined) authorizeUnsigned(request);
      else {
        const key = await ring.auth.key(redeemed.keyId);
        if (!key)
          throw new SparError("UNAUTHORIZED", "WebSocket ticket refused: its key is no longer authorized");
        request.sparKeyId = redeemed.keyId;
        request.sparScope = key.scope;
      }
    } else if (
      (request.method === "GET" || request.method === "HEAD") &&
      isPublicAsset(request.originalUrl.split("?")[0] ?? "")
    ) {
      // A dashboard's files are public; the API calls it makes are not.
      return;
    } else {
      authorizeUnsigned(request);
    }
    const admitted = limiter.take(clientOf(request));
    if (!admitted.ok) {
      throw new SparError(
        "RATE_LIMITED",
        `too many requests: at most ${limiter.max} a minute; retry in ${admitted.retryAfterS} s`,
        { retry_after_s: admitted.retryAfterS },
      );
    }
    reply.header("x-ratelimit-limit", limiter.max);
    reply.header("x-ratelimit-remaining", admitted.remaining);
    reply.header("x-ratelimit-reset", admitted.resetS);
  });

  async function authenticateSigned(request: FastifyRequest): Promise<void> {
    const keyId = signatureKeyId(request.headers);
    const key = keyId === undefined ? undefined : await ring.auth.key(keyId);
    const result = verifyRequest(
      {
        method: request.method,
        targetUri: `http://${request.headers.host ?? ""}${request.originalUrl}`,
        headers: request.headers,
      },
      {
        keys: (id) => (id === keyId ? key?.publicKey : undefined),
        hasBody: hasBody(request),
        maxAgeSeconds: MAX_AGE_S,
      },
    );
    if (!result.ok) throw new SparError("UNAUTHORIZED", `request signature refused: ${result.reason}`);
    request.sparKeyId = result.keyId;
    request.sparScope = key?.scope;
    request.sparNonce = { value: result.nonce, expiresAt: result.created + 2 * MAX_AGE_S };
  }

  function authorizeUnsigned(request: FastifyRequest): void {
    const refuse = (why: string) => {
      throw new SparError(
        "UNAUTHORIZED",
        `unsigned request refused: ${why}; sign requests with an authorized key (spar key add)`,
      );
    };
    if (!config.auth.allow_unsigned_loopback) refuse("this daemon accepts signed requests only");
    if (!isLoopbackAddress(request.socket.remoteAddress)) refuse("it does not come from this machine");
    if (!isLoopbackHostHeader(request.headers.host))
      refuse(`Host "${request.headers.host ?? ""}" is not a loopback name with an optional port`);
    const forwarded = forwardingHeader(request);
    if (forwarded) refuse(`it carries a forwarding header (${forwarded})`);
  }

  // The signature covers the Content-Digest header; this binds the body to it. Only a request that
  // passed every check claims its nonce.
  app.addHook("preValidation", async (request) => {
    if (!request.sparKeyId || !request.sparNonce) return;
    if (hasBody(request)) {
      const header = request.headers["content-digest"];
      if (typeof header !== "string" || !digestMatches(header, request.rawBody ?? "")) {
        throw new SparError(
          "UNAUTHORIZED",
          "request signature refused: the body does not match its Content-Digest",
        );
      }
    }
    if (
      !(await ring.auth.claimNonce(request.sparKeyId, request.sparNonce.value, request.sparNonce.expiresAt))
    ) {
      throw new SparError("UNAUTHORIZED", "request signature refused: its nonce was already used (a replay)");
    }
  });
}
