/**
 * An LlmDriver for the OpenAI chat-completions and embeddings APIs on the official `openai` SDK. OpenRouter and most
 * local servers speak the same protocol, so the provider id, default base URL and key variable are
 * options, not constants: a sibling provider is one more `createOpenAiDriver` call with other options.
 */
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import OpenAI, { APIConnectionError, APIError } from "openai";
import type { ChatCompletion } from "openai/resources/chat/completions";
import type { LlmDriver, LlmRequest, LlmResponse, ModelSettings } from "../../sdk/index.js";
import {
  isSparError,
  outgoingHeaders,
  parseRetryAfter,
  providerError,
  type SparError,
} from "../../sdk/index.js";
import { embedded, isFunctionCall, parseToolCall, requestBody, stopReason, usageOf } from "./wire.js";

export interface OpenAiDriverOptions {
  /** The id the driver reports and names in its errors. Default "openai". */
  provider?: string;
  /** Used when `settings.base_url` is unset; when both are unset the SDK picks its own. */
  defaultBaseUrl?: string;
  /** The variable read when `settings.api_key_env` is unset. Default "OPENAI_API_KEY". */
  defaultKeyEnv?: string;
  /** The data dir, so the missing-key message can name the exact `.env` file. */
  home?: string;
  /** A server that takes no key (a local OpenAI-compatible one) unless `api_key_env` names one. */
  keyOptional?: boolean;
  /** Sent with every request (e.g. OpenRouter's attribution headers). */
  defaultHeaders?: Record<string, string>;
  /** The server takes `prompt_cache_key` (OpenAI, OpenRouter); others may refuse an unknown field. */
  promptCacheKey?: boolean;
}

/** What the SDK gets as a key for a server that checks none: it refuses an empty one. */
const NO_KEY = "no-key";

const NO_SDK_TIMEOUT_MS = 3_600_000;

type Body = ReturnType<typeof requestBody>;

/** A reply the SDK accepted but the driver cannot use; its message is already fit for people. */
class IncompleteReply extends Error {}

type Connection = Required<Pick<OpenAiDriverOptions, "provider">> & {
  baseURL: string | undefined;
  keyEnv: string;
  keyOptional: boolean;
  home: string | undefined;
};

/**
 * Builds a driver for one (base URL, key variable) pair: `settings` pick the connection, each request's
 * own `model` settings pick the model, max_tokens and temperature. The key is read from `env` on each
 * call, so a missing key fails the request that needs it (PROVIDER_ERROR), not plugin activation.
 *
 * @example
 * const driver = createOpenAiDriver({ provider: "openai", model: "gpt-4o-mini" });
 * const reply = await driver.complete({ model, system: "Be brief.", messages, tools: [] });
 */
export function createOpenAiDriver(
  settings: ModelSettings,
  env: Readonly<Record<string, string | undefined>> = {},
  options: OpenAiDriverOptions = {},
): LlmDriver {
  const conn: Connection = {
    provider: options.provider ?? "openai",
    baseURL: settings.base_url ?? options.defaultBaseUrl,
    keyEnv: settings.api_key_env ?? options.defaultKeyEnv ?? "OPENAI_API_KEY",
    keyOptional: (options.keyOptional ?? false) && settings.api_key_env === undefined,
    home: options.home,
  };
  const keyOf = (): string => {
    const key = conn.keyOptional ? NO_KEY : env[conn.keyEnv];
    if (!key) throw missingKey(conn);
    return key;
  };
  let client: OpenAI | undefined;

  function clientFor(apiKey: string): OpenAI {
    // Rebuilt only if the variable changed since the last call (tests, or a key rotated in-process).
    if (client?.apiKey !== apiKey) {
      // The kernel owns retries and the deadline (one policy for every provider): the SDK does neither.
      client = new OpenAI({
        apiKey,
        baseURL: conn.baseURL,
        maxRetries: 0,
        timeout: NO_SDK_TIMEOUT_MS,
        defaultHeaders: options.defaultHeaders,
        // OPENAI_ORG_ID / OPENAI_PROJECT_ID from the environment belong to OpenAI, not to other servers.
        ...(conn.provider === "openai" ? {} : { organization: null, project: null }),
      });
    }
    return client;
  }

  return {
    provider: conn.provider,
    async probe(signal) {
      const apiKey = keyOf();
      try {
        const page = await clientFor(apiKey).models.list({ signal });
        return `${page.data.length} models listed`;
      } catch (err) {
        throw toSparError(err, conn, apiKey);
      }
    },
    async embed(request) {
      const apiKey = keyOf();
      try {
        // Floats asked for by name: left unset, the SDK asks for base64, which not every compatible server sends.
        const reply = await clientFor(apiKey).embeddings.create(
          {
            model: request.model,
            input: request.input,
            encoding_format: "float",
            ...(request.dimensions !== undefined ? { dimensions: request.dimensions } : {}),
          },
          requestOptions(request),
        );
        return embedded(conn.provider, request, reply);
      } catch (err) {
        throw toSparError(err, conn, apiKey);
      }
    },
    async complete(request) {
      const apiKey = keyOf();
      try {
        const api = clientFor(apiKey);
        const body = requestBody(request, options.promptCacheKey === true);
        return request.onDelta
          ? await streamed(api, body, request, request.onDelta)
          : await unary(api, body, request);
      } catch (err) {
        throw toSparError(err, conn, apiKey);
      }
    },
  };
}

/** The call's signal, and the trace context headers when traces are on (README "Metrics and traces"). */
function requestOptions(request: { signal?: AbortSignal }): {
  signal?: AbortSignal;
  headers?: Record<string, string>;
} {
  const headers = outgoingHeaders();
  return headers ? { signal: request.signal, headers } : { signal: request.signal };
}

async function unary(api: OpenAI, body: Body, request: LlmRequest): Promise<LlmResponse> {
  const completion = await api.chat.completions.create({ ...body, stream: false }, requestOptions(request));
  const choice = completion.choices[0];
  if (!choice) throw new IncompleteReply("the reply had no choices");
  const calls = (choice.message.tool_calls ?? []).filter(isFunctionCall);
  return {
    text: choice.message.content ?? "",
    tool_calls: calls.map((c) => parseToolCall(c.id, c.function.name, c.function.arguments)),
    usage: usageOf(completion.usage),
    stop_reason: stopReason(choice.finish_reason),
    model: completion.model,
  };
}

async function streamed(
  api: OpenAI,
  body: Body,
  request: LlmRequest,
  onDelta: (text: string) => void,
): Promise<LlmResponse> {
  const stream = await api.chat.completions.create(
    { ...body, stream: true, stream_options: { include_usage: true } },
    requestOptions(request),
  );
  let text = "";
  let model = request.model.model;
  let finish: string | null = null;
  let usage: ChatCompletion["usage"];
  // Keyed by the delta's index: a call's id and name come once, its arguments in pieces.
  const calls = new Map<number, { id: string; name: string; arguments: string }>();
  for await (const chunk of stream) {
    model = chunk.model || model;
    if (chunk.usage) usage = chunk.usage;
    const choice = chunk.choices[0];
    if (!choice) continue;
    if (choice.delta.content) {
      text += choice.delta.content;
      onDelta(choice.delta.content);
    }
    for (const delta of choice.delta.tool_calls ?? []) {
      const call = calls.get(delta.index) ?? { id: "", name: "", arguments: "" };
      calls.set(delta.index, call);
      if (delta.id) call.id = delta.id;
      if (delta.function?.name) call.name = delta.function.name;
      if (delta.function?.arguments) call.arguments += delta.function.arguments;
    }
    if (choice.finish_reason) finish = choice.finish_reason;
  }
  // The SDK ends the iteration quietly on abort, and a server may close cleanly mid-reply: neither
  // may pass for a finished answer.
  if (request.signal?.aborted) throw new IncompleteReply("Request was aborted.");
  if (finish === null) throw new IncompleteReply("the stream ended before the reply was complete");
  const ordered = [...calls.entries()].sort(([a], [b]) => a - b).map(([, call]) => call);
  return {
    text,
    // Some compatible servers omit ids; the agent loop needs one to pair the tool result with its call.
    tool_calls: ordered.map((c) => parseToolCall(c.id || `call_${randomUUID()}`, c.name, c.arguments)),
    usage: usageOf(usage),
    stop_reason: stopReason(finish),
    model,
  };
}

function missingKey(conn: Connection): SparError {
  const file = conn.home ? join(conn.home, ".env") : "<data dir>/.env";
  return providerError(conn.provider, `no API key: set ${conn.keyEnv} in the environment or in ${file}`, {
    retryable: false,
  });
}

function toSparError(err: unknown, conn: Connection, apiKey: string): SparError {
  if (isSparError(err)) return err;
  // Belt and braces: no SDK message is known to echo the key, but one must never reach a log.
  const clean = (text: string) => text.split(apiKey).join("***");
  const status = err instanceof APIError && typeof err.status === "number" ? err.status : undefined;
  const retryAfterS = err instanceof APIError ? parseRetryAfter(err.headers?.get("retry-after")) : undefined;
  return providerError(conn.provider, clean(describe(err)), { status, retryAfterS, cause: err });
}

/**
 * The provider's message. A connection error also gets its root cause (e.g. ECONNREFUSED); anything
 * else that is not the SDK's is undici breaking mid-body, a bare `TypeError: terminated`.
 */
function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  if (err instanceof IncompleteReply || (err instanceof APIError && !(err instanceof APIConnectionError))) {
    return err.message;
  }
  let root: unknown = err.cause;
  while (root instanceof Error && root.cause instanceof Error) root = root.cause;
  const detail = root instanceof Error ? `${err.message} (${root.message})` : err.message;
  return err instanceof APIConnectionError ? detail : `the connection broke mid-reply: ${detail}`;
}
