/**
 * Who may call the API (DESIGN §6). A request is either signed (RFC 9421, Ed25519, with a fresh
 * nonce, and its body bound by Content-Digest) or, when `[auth] allow_unsigned_loopback` is on,
 * unsigned from this machine: loopback peer, loopback Host, no forwarding header. A foreign Origin is
 * refused either way unless `[api] cors_origins` lists it. Health is open, and says nothing but
 * that the daemon is up and its version.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import {
  digestMatches,
  isLoopbackAddress,
  isLoopbackHost,
  type RingServices,
  type SparConfig,
  SparError,
  verifyRequest,
} from "../../kernel/sdk.js";

declare module "fastify" {
  interface FastifyRequest {
    /** The key that signed the request, when it was signed. */
    sparKeyId?: string;
    /** The body exactly as received, for the Content-Digest check. */
    rawBody?: string;
  }
}

const OPEN_PATHS = new Set(["/api/v1/health", "/api/health"]);
const FORWARDING = ["forwarded", "x-forwarded-for", "x-forwarded-host", "x-real-ip", "cf-connecting-ip"];
/** A nonce is remembered for as long as a signature carrying it could still pass the age check. */
const MAX_AGE_S = 300;

function hasBody(request: FastifyRequest): boolean {
  const length = Number(request.headers["content-length"] ?? 0);
  return length > 0 || request.headers["transfer-encoding"] !== undefined;
}

export function registerSecurity(
  app: FastifyInstance,
  ring: RingServices,
  config: Readonly<SparConfig>,
): void {
  const allowedOrigins = new Set(config.api.cors_origins.map((o) => o.toLowerCase()));
  const sameOrigin = (origin: string, host: string | undefined) =>
    origin.toLowerCase() === `http://${host?.toLowerCase()}`;

  // Keep the body as received: the digest is over those bytes, not over a re-serialized object.
  const parseJson = app.getDefaultJsonParser("error", "error");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done) => {
    request.rawBody = body as string;
    parseJson(request, body as string, done);
  });

  app.addHook("onRequest", async (request) => {
    const origin = request.headers.origin;
    if (origin && !allowedOrigins.has(origin.toLowerCase()) && !sameOrigin(origin, request.headers.host)) {
      throw new SparError(
        "FORBIDDEN",
        `requests from ${origin} are not allowed; list it in [api] cors_origins to allow it`,
      );
    }
    // A signature, wherever it is sent, must be good: a signed health check proves the key works.
    if (request.headers["signature-input"] !== undefined || request.headers.signature !== undefined) {
      return authenticateSigned(request);
    }
    if (OPEN_PATHS.has(request.url.split("?")[0] ?? "")) return;
    authorizeUnsigned(request);
  });

  function authenticateSigned(request: FastifyRequest): void {
    const result = verifyRequest(
      {
        method: request.method,
        targetUri: `http://${request.headers.host ?? ""}${request.url}`,
        headers: request.headers,
      },
      { keys: (keyId) => ring.auth.key(keyId), hasBody: hasBody(request), maxAgeSeconds: MAX_AGE_S },
    );
    if (!result.ok) throw new SparError("UNAUTHORIZED", `request signature refused: ${result.reason}`);
    if (!ring.auth.claimNonce(result.keyId, result.nonce, result.created + 2 * MAX_AGE_S)) {
      throw new SparError("UNAUTHORIZED", "request signature refused: its nonce was already used (a replay)");
    }
    request.sparKeyId = result.keyId;
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
    if (!isLoopbackHost(request.headers.host))
      refuse(`Host "${request.headers.host ?? ""}" is not a loopback name`);
    const forwarded = FORWARDING.find((h) => request.headers[h] !== undefined);
    if (forwarded) refuse(`it carries a forwarding header (${forwarded})`);
  }

  // The signature covers the Content-Digest header; this binds the body to that header.
  app.addHook("preValidation", async (request) => {
    if (!request.sparKeyId || !hasBody(request)) return;
    const header = request.headers["content-digest"];
    if (typeof header !== "string" || !digestMatches(header, request.rawBody ?? "")) {
      throw new SparError(
        "UNAUTHORIZED",
        "request signature refused: the body does not match its Content-Digest",
      );
    }
  });
}
