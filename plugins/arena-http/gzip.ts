/**
 * gzip for larger responses: a JSON or text body of at least `threshold` bytes, to a client that
 * accepts gzip, goes out compressed (and every such body says `vary: accept-encoding`). Streams (SSE,
 * the WebSocket) are never touched. A dozen lines here instead of @fastify/compress, whose checks on
 * every response cost more than they save on small replies, and ~35 ms on the first one.
 */
import { promisify } from "node:util";
import { gzip } from "node:zlib";
import type { FastifyInstance } from "fastify";

const compress = promisify(gzip);
const COMPRESSIBLE = /^(?:application\/(?:json|javascript|xml)|text\/|image\/svg\+xml)/i;

/** Whether an Accept-Encoding header accepts gzip (a `q=0` refuses it). */
export function acceptsGzip(header: string | undefined): boolean {
  if (!header) return false;
  return header.split(",").some((part) => {
    const [coding, ...params] = part.trim().toLowerCase().split(";");
    if (coding !== "gzip" && coding !== "x-gzip" && coding !== "*") return false;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith("q="));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}

export function registerGzip(app: FastifyInstance, threshold: number): void {
  app.addHook("onSend", async (request, reply, payload) => {
    if (typeof payload !== "string" && !Buffer.isBuffer(payload)) return payload;
    // A string's length never exceeds its byte length, so a short one is settled without counting.
    if (payload.length < threshold && Buffer.byteLength(payload) < threshold) return payload;
    if (reply.hasHeader("content-encoding")) return payload;
    if (!COMPRESSIBLE.test(String(reply.getHeader("content-type") ?? ""))) return payload;
    reply.header("vary", "accept-encoding");
    if (!acceptsGzip(request.headers["accept-encoding"])) return payload;
    reply.header("content-encoding", "gzip");
    reply.removeHeader("content-length");
    return compress(payload);
  });
}
