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
      log.error("request failed", { method: request.method, url: request.url, error: err.message });
    }
    if (spar.code === "RATE_LIMITED" && typeof spar.extra.retry_after_s === "number") {
      reply.header("retry-after", String(Math.ceil(spar.extra.retry_after_s)));
    }
    reply.status(spar.status).send(spar.toJSON());
  };
}
