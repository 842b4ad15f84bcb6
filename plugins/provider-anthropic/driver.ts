/**
 * An LlmDriver for the Anthropic Messages API on the official `@anthropic-ai/sdk`. Only this module
 * imports the SDK at run time (it costs ~200 ms to load), and only index.ts imports this module, on
 * the plugin's activation.
 */
import { join } from "node:path";
import Anthropic, { AnthropicError, APIConnectionError, APIError } from "@anthropic-ai/sdk";
import type { LlmDriver, LlmRequest, LlmResponse, ModelSettings } from "../../sdk/index.js";
import {
  isSparError,
  outgoingHeaders,
  parseRetryAfter,
  providerError,
  type SparError,
} from "../../sdk/index.js";
import { foldStream, IncompleteReply } from "./stream.js";
import { fromWireContent, requestBody, stopReason, usageOf } from "./wire.js";

export interface AnthropicDriverOptions {
  /** The data dir, so the missing-key message can name the exact `.env` file. */
  home?: string;
}

const PROVIDER = "anthropic";
const DEFAULT_KEY_ENV = "ANTHROPIC_API_KEY";
const DEFAULT_BASE_URL = "https://api.anthropic.com";
const NO_SDK_TIMEOUT_MS = 3_600_000;

interface Connection {
  baseURL: string;
  keyEnv: string;
  home: string | undefined;
}

/**
 * Builds a driver for one (base URL, key variable) pair: `settings` pick the connection, each request's
 * own `model` settings pick the model, max_tokens and temperature. The key is read from `env` on each
 * call, so a missing key fails the request that needs it (PROVIDER_ERROR), not plugin activation.
 *
 * @example
 * const driver = createAnthropicDriver({ provider: "anthropic", model: "claude-sonnet-4-5" });
 * const reply = await driver.complete({ model, system: "Be brief.", messages, tools: [] });
 */
export function createAnthropicDriver(
  settings: ModelSettings,
  env: Readonly<Record<string, string | undefined>> = {},
  options: AnthropicDriverOptions = {},
): LlmDriver {
  const conn: Connection = {
    // Given explicitly because the SDK would otherwise read ANTHROPIC_BASE_URL from process.env: where
    // requests go is decided by the model settings alone.
    baseURL: settings.base_url ?? DEFAULT_BASE_URL,
    keyEnv: settings.api_key_env ?? DEFAULT_KEY_ENV,
    home: options.home,
  };
  let client: Anthropic | undefined;

  function clientFor(apiKey: string): Anthropic {
    // Rebuilt only if the variable changed since the last call (tests, or a key rotated in-process).
    if (client?.apiKey !== apiKey) {
      // The kernel owns retries and the deadline (one policy for every provider): the SDK does neither.
      client = new Anthropic({ apiKey, baseURL: conn.baseURL, maxRetries: 0, timeout: NO_SDK_TIMEOUT_MS });
    }
    return client;
  }

  function keyOrThrow(): string {
    const apiKey = env[conn.keyEnv];
    if (!apiKey) throw missingKey(conn);
    return apiKey;
  }

  return {
    provider: PROVIDER,
    async probe(signal) {
      const apiKey = keyOrThrow();
      try {
        // The first argument is the list's query: the signal goes with the request options.
        const page = await clientFor(apiKey).models.list({}, { signal });
        return `${page.data.length} models listed`;
      } catch (err) {
        throw toSparError(err, apiKey);
      }
    },
    async complete(request) {
      const apiKey = keyOrThrow();
      try {
        const api = clientFor(apiKey);
        return request.onDelta ? await streamed(api, request, request.onDelta) : await unary(api, request);
      } catch (err) {
        throw toSparError(err, apiKey);
      }
    },
  };
}

/** The call's signal, and the trace context headers when traces are on (README "Metrics and traces"). */
function requestOptions(request: LlmRequest): { signal?: AbortSignal; headers?: Record<string, string> } {
  const headers = outgoingHeaders();
  return headers ? { signal: request.signal, headers } : { signal: request.signal };
}

async function unary(api: Anthropic, request: LlmRequest): Promise<LlmResponse> {
  const message = await api.messages.create(
    { ...requestBody(request), stream: false },
    requestOptions(request),
  );
  return {
    ...fromWireContent(message.content),
    usage: usageOf(message.usage),
    stop_reason: stopReason(message.stop_reason),
    model: message.model,
  };
}

async function streamed(
  api: Anthropic,
  request: LlmRequest,
  onDelta: (text: string) => void,
): Promise<LlmResponse> {
  const events = await api.messages.create(
    { ...requestBody(request), stream: true },
    requestOptions(request),
  );
  return foldStream(events, onDelta, { model: request.model.model, signal: request.signal });
}

function missingKey(conn: Connection): SparError {
  const file = conn.home ? join(conn.home, ".env") : "<data dir>/.env";
  return providerError(PROVIDER, `no API key: set ${conn.keyEnv} in the environment or in ${file}`, {
    retryable: false,
  });
}

function toSparError(err: unknown, apiKey: string): SparError {
  if (isSparError(err)) return err;
  // Belt and braces: no SDK message is known to echo the key, but one must never reach a log.
  const clean = (text: string) => text.split(apiKey).join("***");
  const status = err instanceof APIError && typeof err.status === "number" ? err.status : undefined;
  const retryAfterS = err instanceof APIError ? parseRetryAfter(err.headers?.get("retry-after")) : undefined;
  return providerError(PROVIDER, clean(describe(err)), { status, retryAfterS, cause: err });
}

/**
 * The provider's message. An HTTP error's `message` is the whole JSON error body, so its `apiMessage`
 * is used instead; a connection error also gets its root cause (e.g. ECONNREFUSED); a body that is not
 * JSON says so; anything else not the SDK's is undici breaking mid-body, a bare `TypeError: terminated`.
 */
function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  if (err instanceof IncompleteReply) return err.message;
  if (err instanceof APIError && !(err instanceof APIConnectionError)) {
    if (err.apiMessage === null) return err.message;
    return err.status === undefined ? err.apiMessage : `${err.status} ${err.apiMessage}`;
  }
  if (err instanceof AnthropicError && !(err instanceof APIConnectionError)) return err.message;
  if (err instanceof SyntaxError) return `the reply was not valid JSON: ${err.message}`;
  let root: unknown = err.cause;
  while (root instanceof Error && root.cause instanceof Error) root = root.cause;
  const detail = root instanceof Error ? `${err.message} (${root.message})` : err.message;
  return err instanceof APIConnectionError ? detail : `the connection broke mid-reply: ${detail}`;
}
