import { STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { type ErrorCode, formatSchemaErrors, isSparError, type Logger, SparError } from "../../sdk/index.js";

/** fastify's own errors, by their stable `code`, mapped onto the catalog. */
const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: "PAYLOAD_TOO_LARGE",
  FST_ERR_CTP_INVALID_MEDIA_TYPE: "UNSUPPORTED_MEDIA_TYPE",
  FST_ERR_BAD_URL: "VALIDATION_FAILED",
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: "VALIDATION_FAILED",
  FST_ERR_CTP_EMPTY_JSON_BODY: "VALIDATION_FAILED",
  FST_ERR_CTP_INVALID_JSON_BODY: "VALIDATION_FAILED",
};

/** Turns anything thrown in a route into the wire shape `{error:{code,message,…}}`. */
export function toSparError(err: FastifyError | Error): SparError {
  if (isSparError(err)) return err;
  const fe = err as FastifyError;
  if (fe.validation) {
    const first = fe.validation[0];
    const where = fe.validationContext ?? "body";
    const message = formatSchemaErrors(fe.validation as Parameters<typeof formatSchemaErrors>[0], where);
    return new SparError("VALIDATION_FAILED", message, { path: `/${where}${first?.instancePath ?? ""}` });
  }
  const mapped =
    (fe.code ? FASTIFY_CODES[fe.code] : undefined) ?? (fe.statusCode ? BY_STATUS[fe.statusCode] : undefined);
  if (mapped === "UNSUPPORTED_MEDIA_TYPE") {
    return new SparError(mapped, "bodies are JSON: send Content-Type: application/json");
  }
  if (mapped) return new SparError(mapped, fe.message);
  return new SparError("INTERNAL", "internal error");
}

/** Any other client error fastify raises, by its status: every answer has the catalog's shape. */
const BY_STATUS: Record<number, ErrorCode> = {
  400: "VALIDATION_FAILED",
  404: "NOT_FOUND",
  413: "PAYLOAD_TOO_LARGE",
  414: "URI_TOO_LONG",
  415: "UNSUPPORTED_MEDIA_TYPE",
};

export function createErrorHandler(log: Logger) {
  return (err: FastifyError | Error, request: FastifyRequest, reply: FastifyReply) => {
    const spar = toSparError(err);
    if (spar.code === "INTERNAL") {
      log.error("request failed", { method: request.method, url: request.originalUrl, error: err.message });
    }
    if (spar.code === "RATE_LIMITED" && typeof spar.extra.retry_after_s === "number") {
      reply.header("retry-after", String(Math.ceil(spar.extra.retry_after_s)));
    }
    reply.status(spar.status).send(envelope(spar));
  };
}

/** The most of a request's own text (an id, a path) an error repeats back. */
export const MAX_ECHO = 100;

/** A piece of the request to repeat in a message: past MAX_ECHO characters, cut and counted. */
export function echo(text: string): string {
  return text.length <= MAX_ECHO ? text : `${text.slice(0, MAX_ECHO)}… (${text.length} characters)`;
}

/**
 * The wire shape of an error, `{error:{code,message,…}}`, for every answer the Arena gives (HTTP,
 * stream, WebSocket frame). Messages quote what the client sent (`no fighter "…"`); a quoted piece
 * longer than MAX_ECHO is cut here, in one place, so no route can reflect a 3,000-character id.
 */
export function envelope(err: SparError): ReturnType<SparError["toJSON"]> {
  const body = err.toJSON();
  body.error.message = body.error.message.replace(/"((?:[^"\\]|\\.)*)"/g, (quoted, inner: string) =>
    inner.length <= MAX_ECHO ? quoted : `"${inner.slice(0, MAX_ECHO)}…" (${inner.length} characters)`,
  );
  return body;
}

/**
 * What Node's HTTP parser refuses before fastify sees a request (headers past the 16 KB limit, a
 * request that is not HTTP, one too slow to arrive) is answered in the catalog's shape too, instead
 * of fastify's own `{"error":"…","statusCode":431}`; then the connection closes, as Node requires.
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === "ECONNRESET" || socket.destroyed) return;
  const spar =
    err.code === "HPE_HEADER_OVERFLOW"
      ? new SparError(
          "HEADERS_TOO_LARGE",
          "the request's headers are larger than this server accepts (16 KB)",
        )
      : err.code === "ERR_HTTP_REQUEST_TIMEOUT"
        ? new SparError("REQUEST_TIMEOUT", "the request did not arrive in time")
        : new SparError("VALIDATION_FAILED", "the request is not valid HTTP/1.1");
  const body = JSON.stringify(envelope(spar));
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${spar.status} ${STATUS_CODES[spar.status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}
