/**
 * An LlmDriver (chat and embeddings) for the Gemini API on the official `@google/genai` SDK (the Gemini Developer API, not
 * Vertex AI).
 */
import { GoogleGenAI } from "@google/genai";
import type { LlmDriver, LlmRequest, LlmResponse, ModelSettings } from "../../sdk/index.js";
import { checkEmbeddings, outgoingHeaders, placeContext } from "../../sdk/index.js";
import { IncompleteReply, missingKey, PROVIDER, toSparError } from "./errors.js";
import {
  readParts,
  requestConfig,
  type SignatureOf,
  type SignedCall,
  stopReason,
  toContents,
  usageOf,
} from "./wire.js";

export interface GoogleDriverOptions {
  /** The data dir, so the missing-key message can name the exact `.env` file. */
  home?: string;
}

/** The variables tried, in order, when `api_key_env` is unset. */
export const DEFAULT_KEY_ENVS = ["GEMINI_API_KEY", "GOOGLE_API_KEY"];

/** How a purpose reads as a Gemini embedding task type: stored text, or what is searched for. */
const TASK_TYPES = { document: "RETRIEVAL_DOCUMENT", query: "RETRIEVAL_QUERY" } as const;

/** Enough for every call still in a live conversation; older ones get the documented stand-in. */
const MAX_SIGNATURES = 2_000;

/**
 * Builds a driver for one (base URL, key variable) pair: `settings` pick the connection, each request's
 * own `model` settings pick the model, max_tokens and temperature. The key is read from `env` on each
 * call (`api_key_env`, else GEMINI_API_KEY, then GOOGLE_API_KEY), so a missing key fails the request
 * that needs it, not plugin activation. `base_url` is the bare origin; the SDK adds `/v1beta/...`.
 *
 * @example
 * const driver = createGoogleDriver({ provider: "google", model: "gemini-2.5-flash" });
 * const reply = await driver.complete({ model, system: "Be brief.", messages, tools: [] });
 */
export function createGoogleDriver(
  settings: ModelSettings,
  env: Readonly<Record<string, string | undefined>> = {},
  options: GoogleDriverOptions = {},
): LlmDriver {
  const keyEnvs = settings.api_key_env ? [settings.api_key_env] : DEFAULT_KEY_ENVS;
  let client: { apiKey: string; ai: GoogleGenAI } | undefined;
  // Thought signatures by tool call id, oldest first: the shared ToolCall has no field for them.
  const signatures = new Map<string, string>();

  function readKey(): string {
    for (const name of keyEnvs) {
      const value = env[name];
      if (value) return value;
    }
    throw missingKey(keyEnvs, options.home);
  }

  function clientFor(apiKey: string): GoogleGenAI {
    // Rebuilt only if the key changed since the last call (tests, or a key rotated in-process).
    if (client?.apiKey !== apiKey) {
      // No retryOptions: the SDK then makes exactly one attempt (it retries only when they are given).
      // No timeout: none is the SDK's default, and it disables undici's own 300 s ones. Both belong to
      // the kernel. vertexai: false, so GOOGLE_GENAI_USE_VERTEXAI in the environment cannot switch APIs.
      const httpOptions = settings.base_url ? { baseUrl: settings.base_url } : undefined;
      client = { apiKey, ai: new GoogleGenAI({ apiKey, vertexai: false, httpOptions }) };
    }
    return client.ai;
  }

  function remember(calls: SignedCall[]): void {
    for (const { call, signature } of calls) {
      if (!signature) continue;
      signatures.set(call.id, signature);
      const oldest = signatures.keys().next();
      if (signatures.size > MAX_SIGNATURES && !oldest.done) signatures.delete(oldest.value);
    }
  }

  return {
    provider: PROVIDER,
    async probe(signal) {
      const apiKey = readKey();
      try {
        const pager = await clientFor(apiKey).models.list({ config: { abortSignal: signal } });
        return `${pager.pageLength} models listed`;
      } catch (err) {
        throw toSparError(err, apiKey, signal);
      }
    },
    async embed(request) {
      const apiKey = readKey();
      try {
        const reply = await clientFor(apiKey).models.embedContent({
          model: request.model,
          // Each text its own Content: plain strings would be joined into one for some models.
          contents: request.input.map((text) => ({ parts: [{ text }] })),
          config: {
            ...(request.purpose ? { taskType: TASK_TYPES[request.purpose] } : {}),
            ...(request.dimensions !== undefined ? { outputDimensionality: request.dimensions } : {}),
            abortSignal: request.signal,
          },
        });
        return {
          vectors: checkEmbeddings(
            PROVIDER,
            request,
            reply.embeddings?.map((e) => e.values),
          ),
        };
      } catch (err) {
        throw toSparError(err, apiKey, request.signal);
      }
    },
    async complete(request) {
      const apiKey = readKey();
      const signatureOf: SignatureOf = (id) => signatures.get(id);
      try {
        const ai = clientFor(apiKey);
        const reply = request.onDelta
          ? await streamed(ai, request, signatureOf, request.onDelta)
          : await unary(ai, request, signatureOf);
        remember(reply.calls);
        return reply.response;
      } catch (err) {
        throw toSparError(err, apiKey, request.signal);
      }
    },
  };
}

interface Reply {
  response: LlmResponse;
  calls: SignedCall[];
}

function params(request: LlmRequest, signatureOf: SignatureOf) {
  // The trace context when traces are on (README "Metrics and traces"), as this request's headers.
  const headers = outgoingHeaders();
  return {
    model: request.model.model,
    contents: toContents(request.messages, signatureOf, placeContext(request)),
    config: {
      ...requestConfig(request),
      abortSignal: request.signal,
      ...(headers ? { httpOptions: { headers } } : {}),
      // One request per call. Left on, the SDK would resend the request to continue a reply that
      // stopped with a CONTINUATION finish, and reconnect a stream that dropped: retries and time the
      // kernel could not see. A CONTINUATION finish now ends the reply as stop reason "other".
      automaticContinuation: false,
    },
  };
}

async function unary(ai: GoogleGenAI, request: LlmRequest, signatureOf: SignatureOf): Promise<Reply> {
  const response = await ai.models.generateContent(params(request, signatureOf));
  const candidate = response.candidates?.[0];
  if (!candidate) throw noCandidate(response.promptFeedback?.blockReason);
  const { text, calls } = readParts(candidate.content?.parts);
  return {
    response: {
      text: text.join(""),
      tool_calls: calls.map((c) => c.call),
      usage: usageOf(response.usageMetadata),
      stop_reason: stopReason(candidate.finishReason, calls.length > 0),
      model: response.modelVersion || request.model.model,
    },
    calls,
  };
}

async function streamed(
  ai: GoogleGenAI,
  request: LlmRequest,
  signatureOf: SignatureOf,
  onDelta: (text: string) => void,
): Promise<Reply> {
  const stream = await ai.models.generateContentStream(params(request, signatureOf));
  let text = "";
  let model = request.model.model;
  let finish: string | undefined;
  let blocked: string | undefined;
  let usage: Parameters<typeof usageOf>[0];
  const calls: SignedCall[] = [];
  for await (const chunk of stream) {
    model = chunk.modelVersion || model;
    if (chunk.usageMetadata) usage = chunk.usageMetadata;
    blocked = chunk.promptFeedback?.blockReason ?? blocked;
    const candidate = chunk.candidates?.[0];
    const parts = readParts(candidate?.content?.parts);
    for (const piece of parts.text) {
      text += piece;
      onDelta(piece);
    }
    calls.push(...parts.calls);
    if (candidate?.finishReason) finish = candidate.finishReason;
  }
  // A server may close cleanly mid-reply: that may not pass for a finished answer.
  if (request.signal?.aborted) throw new IncompleteReply("the request was aborted");
  if (finish === undefined) {
    if (blocked) throw noCandidate(blocked);
    throw new IncompleteReply("the stream ended before the reply was complete");
  }
  return {
    response: {
      text,
      tool_calls: calls.map((c) => c.call),
      usage: usageOf(usage),
      stop_reason: stopReason(finish, calls.length > 0),
      model,
    },
    calls,
  };
}

// A blocked prompt is answered 200 with no candidate; the same prompt would be blocked again.
function noCandidate(blockReason: string | undefined): IncompleteReply {
  return blockReason
    ? new IncompleteReply(`the prompt was blocked (${blockReason})`, false)
    : new IncompleteReply("the reply had no candidates");
}
