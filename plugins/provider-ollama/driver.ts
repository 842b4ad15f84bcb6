/**
 * An LlmDriver (chat and embeddings) for a local Ollama runner, or a hosted endpoint that speaks the Ollama API, on the official
 * `ollama` client.
 */
import type { ChatResponse } from "ollama";
import type { LlmDriver, LlmRequest, LlmResponse, ModelSettings, ToolCall } from "../../sdk/index.js";
import { checkEmbeddings, outgoingHeaders } from "../../sdk/index.js";
import { type Call, IncompleteReply, openCall, PROVIDER, toSparError } from "./connection.js";
import { requestBody, stopReason, toolCallsOf, usageOf } from "./wire.js";

export const DEFAULT_HOST = "http://127.0.0.1:11434";

export interface OllamaDriverOptions {
  /** The fetch every request goes through. Default: the global one. */
  fetch?: typeof fetch;
  /** Where `settings.api_key_env` is read: only the key the kernel allowed (see driverCache). Default: none. */
  env?: Readonly<Record<string, string | undefined>>;
}

/**
 * Builds a driver for one host: `settings` pick the host (`base_url`, the bare origin) and the key
 * variable, each request's own `model` settings pick the model, max_tokens and temperature. A local
 * runner needs no key; when `api_key_env` names a variable that is set, its value goes out as a bearer
 * token (hosted Ollama-compatible endpoints).
 *
 * @example
 * const driver = createOllamaDriver({ provider: "ollama", model: "llama3.2" });
 * const reply = await driver.complete({ model, system: "Be brief.", messages, tools: [] });
 */
export function createOllamaDriver(settings: ModelSettings, options: OllamaDriverOptions = {}): LlmDriver {
  const host = settings.base_url ?? DEFAULT_HOST;
  const env = options.env ?? {};
  const baseFetch = options.fetch ?? globalThis.fetch;

  // Read per call, so a key set or rotated in-process applies without a new driver.
  function open(signal: AbortSignal | undefined): { call: Call; apiKey: string | undefined } {
    const apiKey = settings.api_key_env ? env[settings.api_key_env] || undefined : undefined;
    // The trace context when traces are on (README "Metrics and traces"): open() runs per call.
    const trace = outgoingHeaders();
    const headers =
      apiKey || trace ? { ...trace, ...(apiKey ? { Authorization: `Bearer ${apiKey}` } : {}) } : undefined;
    return { call: openCall(host, baseFetch, headers, signal), apiKey };
  }

  return {
    provider: PROVIDER,
    async probe(signal) {
      const { call, apiKey } = open(signal);
      try {
        const list = await call.client.list();
        return `${list.models.length} models installed`;
      } catch (err) {
        throw toSparError(err, { host, call, signal, apiKey });
      } finally {
        call.close();
      }
    },
    async embed(request) {
      const { call, apiKey } = open(request.signal);
      try {
        const { model, input, dimensions } = request;
        const reply = await call.client.embed({
          model,
          input,
          ...(dimensions !== undefined ? { dimensions } : {}),
        });
        const vectors = checkEmbeddings(PROVIDER, request, reply.embeddings);
        const tokens = reply.prompt_eval_count;
        return typeof tokens === "number" ? { vectors, usage: { input_tokens: tokens } } : { vectors };
      } catch (err) {
        throw toSparError(err, { host, model: request.model, call, signal: request.signal, apiKey });
      } finally {
        call.close();
      }
    },
    async complete(request) {
      const { call, apiKey } = open(request.signal);
      try {
        return request.onDelta ? await streamed(call, request, request.onDelta) : await unary(call, request);
      } catch (err) {
        throw toSparError(err, { host, model: request.model.model, call, signal: request.signal, apiKey });
      } finally {
        call.close();
      }
    },
  };
}

async function unary(call: Call, request: LlmRequest): Promise<LlmResponse> {
  const reply = await call.client.chat({ ...requestBody(request), stream: false });
  // Typed as always present, but a compatible server could send anything that parses.
  const message: Partial<ChatResponse["message"]> | undefined = reply.message;
  if (!message) throw new IncompleteReply("the reply had no message");
  const calls = toolCallsOf(message);
  return {
    text: message.content ?? "",
    tool_calls: calls,
    usage: usageOf(reply),
    stop_reason: stopReason(reply.done_reason, calls.length),
    model: reply.model || request.model.model,
  };
}

async function streamed(
  call: Call,
  request: LlmRequest,
  onDelta: (text: string) => void,
): Promise<LlmResponse> {
  const stream = await call.client.chat({ ...requestBody(request), stream: true });
  let text = "";
  let model = request.model.model;
  let final: ChatResponse | undefined;
  const calls: ToolCall[] = [];
  // The client throws on an `{"error": …}` line and on a stream that closes without `done: true`.
  for await (const part of stream) {
    // Lines already buffered would still come through: no delta may reach a caller that has left.
    if (request.signal?.aborted) break;
    model = part.model || model;
    const content = part.message?.content;
    if (content) {
      text += content;
      onDelta(content);
    }
    calls.push(...toolCallsOf(part.message));
    if (part.done) final = part;
  }
  // Even a `done` line that was buffered when the signal fired does not count: the caller has moved on.
  if (request.signal?.aborted) throw new IncompleteReply("the request was aborted");
  if (!final) throw new IncompleteReply("the stream ended before the reply was complete");
  return {
    text,
    tool_calls: calls,
    usage: usageOf(final),
    stop_reason: stopReason(final.done_reason, calls.length),
    model,
  };
}
