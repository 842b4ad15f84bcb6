/**
 * Errors on the OpenAI-compatible routes in OpenAI's envelope, `{error: {message, type, param,
 * code}}`, so an OpenAI client raises its usual exception (`RateLimitError`, `NotFoundError` …). The
 * status is the catalog's, as on every other route; `type` follows from it, `code` is Spar's code
 * (`model_not_found` for an unknown fighter, as OpenAI says for an unknown model), and `param` names
 * the offending request field in OpenAI's notation (`messages[2].content`).
 */
import type { FastifyError } from "fastify";
import { formatSchemaErrors, isSparError, SparError } from "../../sdk/index.js";
import { envelope, toSparError } from "./errors.js";

/** An error as an OpenAI client receives it. */
export interface OpenAiErrorBody {
  error: { message: string; type: string; param: string | null; code: string };
}

export interface OpenAiErrorAnswer {
  status: number;
  /** `Retry-After` for a 429. */
  headers: Record<string, string>;
  body: OpenAiErrorBody;
}

/** OpenAI's error type for a status. */
export function errorType(status: number): string {
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status === 429) return "rate_limit_error";
  if (status >= 500) return "api_error";
  return "invalid_request_error";
}

/** `/body/messages/2/content` → `messages[2].content`; null for anything but the body. */
export function paramOf(path: unknown): string | null {
  if (typeof path !== "string" || !path.startsWith("/body/")) return null;
  const segments = path.slice("/body/".length).split("/").filter(Boolean);
  let param = "";
  for (const segment of segments) {
    param += /^\d+$/.test(segment) ? `[${segment}]` : param === "" ? segment : `.${segment}`;
  }
  return param || null;
}

/** A schema refusal in the client's terms: `"messages[0].role" must be one of: …`, no `body.` prefix. */
function fromValidation(err: FastifyError): SparError {
  const errors = err.validation as Parameters<typeof formatSchemaErrors>[0];
  const where = err.validationContext ?? "body";
  const first = errors?.[0];
  const message = formatSchemaErrors(errors, where === "body" ? "" : where).replace(
    /"([^"]*)"/,
    (_, key: string) => `"${key.replace(/\.(\d+)/g, "[$1]")}"`,
  );
  return new SparError("VALIDATION_FAILED", message, { path: `/${where}${first?.instancePath ?? ""}` });
}

/** Anything thrown on an OpenAI-compatible route, as OpenAI's error envelope with its status. */
export function toOpenAiError(err: Error): OpenAiErrorAnswer {
  const fastify = err as FastifyError;
  const spar = !isSparError(err) && fastify.validation ? fromValidation(fastify) : toSparError(fastify);
  const headers: Record<string, string> = {};
  const retry = spar.extra.retry_after_s;
  if (spar.status === 429 && typeof retry === "number") headers["retry-after"] = String(Math.ceil(retry));
  const code = spar.code === "FIGHTER_NOT_FOUND" ? "model_not_found" : spar.code;
  return {
    status: spar.status,
    headers,
    body: {
      error: {
        // The same cap on what the message repeats of the request as Spar's own envelope.
        message: envelope(spar).error.message,
        type: errorType(spar.status),
        param: paramOf(spar.extra.path),
        code,
      },
    },
  };
}
