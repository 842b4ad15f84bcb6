// A scripted stand-in for the OpenAI chat-completions API. It speaks the real wire protocol so the
// real `openai` SDK can be pointed at it with only `baseURL` changed.
import { randomBytes } from "node:crypto";
import type { ServerResponse } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import {
  base64Floats,
  createFakeEmbeddings,
  type EmbedCall,
  type Embedder,
  embedTokens,
  type FakeEmbeddings,
} from "./embeddings.js";
import { parseJsonObject, sendJson, startFakeHttp, write } from "./http-fake.js";
import { createPrefixCache } from "./prompt-cache.js";
import {
  type FakeLlmServer,
  type ReceivedCall,
  type ScriptedReply,
  defaultReply as scriptDefault,
  splitForStreaming,
} from "./scripted.js";

export type { ScriptedReply, ScriptedToolCall } from "./scripted.js";

export interface ChatContentPart {
  type: string;
  text?: string;
  [key: string]: unknown;
}

export interface ChatMessageToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

export interface ChatMessage {
  role: "system" | "developer" | "user" | "assistant" | "tool";
  content?: string | ChatContentPart[] | null;
  tool_calls?: ChatMessageToolCall[];
  tool_call_id?: string;
  name?: string;
}

export interface ChatTool {
  type: "function";
  function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean };
}

export interface ChatCompletionRequestBody {
  model: string;
  messages: ChatMessage[];
  tools?: ChatTool[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  max_tokens?: number;
  max_completion_tokens?: number;
  temperature?: number;
  prompt_cache_key?: string;
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: ChatCompletionRequestBody | undefined;
}

export interface FakeOpenAI extends FakeLlmServer, FakeEmbeddings {
  /** Chat requests; embedding requests are in `embedCalls`. */
  readonly requests: RecordedRequest[];
  setDefault(fn: (body: ChatCompletionRequestBody) => ScriptedReply): void;
}

const MODELS = {
  object: "list",
  data: [{ id: "fake-model", object: "model", created: 0, owned_by: "spar-tests" }],
};

const ERROR_TYPES: Record<number, [type: string, code: string | null]> = {
  400: ["invalid_request_error", null],
  401: ["invalid_request_error", "invalid_api_key"],
  403: ["permission_error", null],
  404: ["invalid_request_error", "not_found"],
  429: ["rate_limit_error", "rate_limit_exceeded"],
};

const CHUNK_GAP_MS = 3;

function contentText(content: ChatMessage["content"]): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((part) => (typeof part.text === "string" ? part.text : "")).join("");
}

function defaultReply(body: ChatCompletionRequestBody): ScriptedReply {
  const last = body.messages.at(-1);
  if (last?.role === "tool") return scriptDefault("tool", contentText(last.content));
  return scriptDefault("user", contentText(body.messages.findLast((m) => m.role === "user")?.content));
}

function parseBody(raw: string): ChatCompletionRequestBody | undefined {
  const parsed = parseJsonObject(raw);
  return parsed && Array.isArray(parsed.messages)
    ? (parsed as unknown as ChatCompletionRequestBody)
    : undefined;
}

const isSystem = (m: ChatMessage) => m.role === "system" || m.role === "developer";

function normalize(body: ChatCompletionRequestBody): ReceivedCall {
  // The system prompt is the first message; a system message after it is Spar's per-turn context
  // (right after it on a bout's first turn, which has no history).
  const split = Math.min(1, body.messages.length);
  const texts = (messages: ChatMessage[]) =>
    messages
      .filter(isSystem)
      .map((m) => contentText(m.content))
      .join("\n");
  return {
    model: body.model,
    system: texts(body.messages.slice(0, split)),
    context: texts(body.messages.slice(split)),
    transcript: body.messages.map((m) => contentText(m.content)).filter(Boolean),
    tools: (body.tools ?? []).map((t) => t.function.name),
    last_user_text: contentText(body.messages.findLast((m) => m.role === "user")?.content),
    tool_results: body.messages.filter((m) => m.role === "tool").map((m) => contentText(m.content)),
    stream: body.stream === true,
  };
}

function sendError(res: ServerResponse, status: number, message: string, headers?: Record<string, string>) {
  const [type, code] = ERROR_TYPES[status] ?? (status >= 500 ? ["server_error", null] : ["api_error", null]);
  sendJson(res, status, { error: { message, type, param: null, code } }, headers);
}

const newId = (prefix: string) => `${prefix}${randomBytes(12).toString("hex")}`;

/** `POST /v1/embeddings`: the body's inputs, or undefined when it is not one the API would take. */
function embedCall(raw: string): (EmbedCall & { base64: boolean }) | undefined {
  const body = parseJsonObject(raw);
  const input = typeof body?.input === "string" ? [body.input] : body?.input;
  if (!body || typeof body.model !== "string" || !Array.isArray(input)) return undefined;
  if (!input.every((text): text is string => typeof text === "string")) return undefined;
  const dimensions = typeof body.dimensions === "number" ? body.dimensions : undefined;
  return { model: body.model, inputs: input, dimensions, base64: body.encoding_format === "base64" };
}

export async function startFakeOpenAI(
  options: { port?: number; embed?: Embedder } = {},
): Promise<FakeOpenAI> {
  const embeddings = createFakeEmbeddings(options.embed);
  const queue: ScriptedReply[] = [];
  const requests: RecordedRequest[] = [];
  let makeDefault = defaultReply;
  let requestCount = 0;
  let cache = createPrefixCache({ step: 128 });

  const http = await startFakeHttp(async (req, res, raw, signal) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const path = url.pathname.replace(/\/+$/, "");
    if (req.method === "GET" && path === "/v1/models") return sendJson(res, 200, MODELS);
    if (req.method === "POST" && path === "/v1/embeddings") {
      const call = embedCall(raw);
      if (!call) return sendError(res, 400, "'input' must be a string or an array of strings.");
      const { base64, ...recorded } = call;
      const { failure, vectors } = await embeddings.answer(recorded, req.headers, signal);
      if (failure && "status" in failure) {
        const wait = failure.retry_after_s;
        const headers = wait === undefined ? undefined : { "retry-after": String(wait) };
        return sendError(res, failure.status, failure.message ?? "scripted failure", headers);
      }
      if (failure) return;
      const data = vectors.map((vector, index) => ({
        object: "embedding",
        index,
        embedding: base64 ? base64Floats(vector) : vector,
      }));
      const tokens = embedTokens(call.inputs);
      const usage = { prompt_tokens: tokens, total_tokens: tokens };
      return sendJson(res, 200, { object: "list", data, model: call.model, usage });
    }
    if (req.method !== "POST" || path !== "/v1/chat/completions") {
      return sendError(res, 404, `Unknown request URL: ${req.method} ${url.pathname}`);
    }
    const body = parseBody(raw);
    requests.push({ method: req.method, path: url.pathname, headers: { ...req.headers }, body });
    if (!body) return sendError(res, 400, "We could not parse the JSON body of your request.");

    const reply = queue.shift() ?? makeDefault(body);
    const headers = { "x-request-id": `req_${++requestCount}`, ...reply.headers };
    if (reply.delay_ms) await sleep(reply.delay_ms, undefined, { signal });
    if (reply.status !== undefined && reply.status >= 400) {
      return sendError(res, reply.status, reply.error_message ?? "scripted failure", headers);
    }
    if (reply.malformed) return sendMalformed(res, body.stream === true);

    const id = newId("chatcmpl-");
    const created = Math.floor(Date.now() / 1000);
    const model = reply.model ?? body.model;
    const text = reply.text ?? "";
    const calls = (reply.tool_calls ?? []).map((call) => ({
      id: newId("call_"),
      type: "function" as const,
      function: {
        name: call.name,
        arguments: typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments),
      },
    }));
    const finishReason = calls.length > 0 ? "tool_calls" : "stop";
    const prompt = body.messages.map((m) => contentText(m.content)).join("");
    // Unscripted, the prefix it shares with an earlier request of its cache key (and tools) is cached.
    const key = `${body.prompt_cache_key ?? ""}\u0000${JSON.stringify(body.tools ?? [])}`;
    const cached = cache(prompt, key);
    const tokens = reply.usage ?? {
      prompt_tokens: Math.ceil(prompt.length / 4),
      completion_tokens: Math.max(1, Math.ceil(text.length / 4)),
      ...(cached > 0 ? { cached_tokens: cached } : {}),
    };
    // As the real API reports: prompt_tokens counts the cached ones, named in prompt_tokens_details.
    const usage = {
      prompt_tokens: tokens.prompt_tokens,
      completion_tokens: tokens.completion_tokens,
      total_tokens: tokens.prompt_tokens + tokens.completion_tokens,
      prompt_tokens_details: { cached_tokens: tokens.cached_tokens ?? 0, audio_tokens: 0 },
    };

    if (body.stream !== true) {
      const message = {
        role: "assistant",
        content: reply.text ?? (calls.length > 0 ? null : ""),
        ...(calls.length > 0 ? { tool_calls: calls } : {}),
        refusal: null,
      };
      const choice = { index: 0, message, finish_reason: finishReason, logprobs: null };
      const completion = { id, object: "chat.completion", created, model, choices: [choice], usage };
      return sendJson(res, 200, completion, headers);
    }

    const includeUsage = body.stream_options?.include_usage === true;
    // The real API puts `usage: null` on every chunk when usage was requested, then one usage-only chunk.
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
      id,
      object: "chat.completion.chunk",
      created,
      model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      ...(includeUsage ? { usage: null } : {}),
    });
    const events: unknown[] = [chunk({ role: "assistant", content: "", refusal: null })];
    if (text) for (const piece of splitForStreaming(text)) events.push(chunk({ content: piece }));
    for (const [index, { id: callId, function: fn }] of calls.entries()) {
      const opening = { index, id: callId, type: "function", function: { name: fn.name, arguments: "" } };
      events.push(chunk({ tool_calls: [opening] }));
      for (const piece of halves(fn.arguments)) {
        events.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
      }
    }
    const finishAt = events.length;
    events.push(chunk({}, finishReason));
    if (includeUsage) {
      events.push({ id, object: "chat.completion.chunk", created, model, choices: [], usage });
    }

    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", ...headers });
    res.flushHeaders();
    // Cut after the role chunk and part of the content, never reaching finish_reason or [DONE].
    const cut = reply.truncate_stream
      ? Math.min(finishAt, Math.max(2, Math.ceil(finishAt / 2)))
      : events.length;
    for (const event of events.slice(0, cut)) {
      await write(res, `data: ${JSON.stringify(event)}\n\n`);
      await sleep(CHUNK_GAP_MS, undefined, { signal });
    }
    if (reply.truncate_stream) {
      res.socket?.destroy();
      return;
    }
    res.end("data: [DONE]\n\n");
  }, options);

  return {
    url: `http://127.0.0.1:${http.port}/v1`,
    requests,
    calls: () => requests.flatMap((r) => (r.body ? [normalize(r.body)] : [])),
    enqueue: (...replies) => {
      queue.push(...replies);
    },
    setDefault: (fn) => {
      makeDefault = fn;
    },
    embedCalls: embeddings.embedCalls,
    embedKeys: embeddings.embedKeys,
    failEmbeddings: embeddings.failEmbeddings,
    reset: () => {
      embeddings.reset();
      cache = createPrefixCache({ step: 128 });
      queue.length = 0;
      requests.length = 0;
      makeDefault = defaultReply;
    },
    close: () => http.close(),
  };
}

/** Tool-call arguments go out in two pieces at least, as the real API splits them. */
function halves(s: string): string[] {
  const mid = Math.ceil(s.length / 2);
  return [s.slice(0, mid), s.slice(mid)].filter((p) => p !== "");
}

function sendMalformed(res: ServerResponse, stream: boolean): void {
  if (!stream) {
    res.writeHead(200, { "content-type": "application/json" });
    res.end('{"id": "chatcmpl-broken", "choices": [');
    return;
  }
  res.writeHead(200, { "content-type": "text/event-stream" });
  res.end('data: {"id": "chatcmpl-broken", "choices": [{"delta": \n\ndata: [DONE]\n\n');
}
