// A scripted stand-in for the Gemini API (generativelanguage.googleapis.com, v1beta). It speaks the real
// wire protocol so the real `@google/genai` SDK can be pointed at it with only `httpOptions.baseUrl`.
//
// Tool results: the fake reads a functionResponse's `response` object as `JSON.stringify(response)`, in
// `calls().tool_results` and in the default reply ("done: {\"result\":\"4C\"}"), because the protocol has
// no string form of a tool result.
//
// Function calls come without ids, the first of a reply with a random `thoughtSignature`, as Gemini 3
// sends them; the fake does not check that a replayed call carries it back.
import { randomBytes } from "node:crypto";
import type { ServerResponse } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import { createFakeEmbeddings, type EmbedCall, type Embedder, type FakeEmbeddings } from "./embeddings.js";
import { parseJsonObject, sendJson, startFakeHttp, write } from "./http-fake.js";
import { createPrefixCache } from "./prompt-cache.js";
import {
  estimateTokens,
  type FakeLlmServer,
  isSparContext,
  type ReceivedCall,
  type ScriptedReply,
  defaultReply as scriptDefault,
  splitForStreaming,
} from "./scripted.js";

export type { ScriptedReply, ScriptedToolCall } from "./scripted.js";

export interface GeminiPart {
  text?: string;
  thought?: boolean;
  thoughtSignature?: string;
  functionCall?: { name: string; args?: Record<string, unknown>; id?: string };
  functionResponse?: { name: string; response?: Record<string, unknown>; id?: string };
  [key: string]: unknown;
}

export interface GeminiContent {
  role?: string;
  parts?: GeminiPart[];
}

export interface GeminiFunctionDeclaration {
  name: string;
  description?: string;
  parameters?: Record<string, unknown>;
  parametersJsonSchema?: Record<string, unknown>;
}

/** The body of `:generateContent` / `:streamGenerateContent` as the SDK sends it. */
export interface GenerateContentRequestBody {
  contents: GeminiContent[];
  systemInstruction?: GeminiContent;
  tools?: { functionDeclarations?: GeminiFunctionDeclaration[] }[];
  generationConfig?: { maxOutputTokens?: number; temperature?: number; [key: string]: unknown };
  [key: string]: unknown;
}

export interface RecordedRequest {
  method: string;
  /** Path and query, e.g. `/v1beta/models/gemini-x:streamGenerateContent?alt=sse`. */
  path: string;
  /** Lower-cased, as node:http gives them; the SDK sends the key as `x-goog-api-key`. */
  headers: Record<string, string | string[] | undefined>;
  body: GenerateContentRequestBody | undefined;
}

export interface FakeGemini extends FakeLlmServer, FakeEmbeddings {
  /** Chat requests; embedding requests are in `embedCalls`. */
  readonly requests: RecordedRequest[];
}

const MODELS = {
  models: [
    {
      name: "models/gemini-fake",
      displayName: "Gemini Fake",
      inputTokenLimit: 1_048_576,
      outputTokenLimit: 65_536,
      supportedGenerationMethods: ["generateContent", "countTokens"],
    },
  ],
};

const STATUS_NAMES: Record<number, string> = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  409: "ABORTED",
  429: "RESOURCE_EXHAUSTED",
  500: "INTERNAL",
  503: "UNAVAILABLE",
  504: "DEADLINE_EXCEEDED",
};

const GENERATE = /^\/v1beta\/(?:models\/)?(.+):(generateContent|streamGenerateContent)$/;
const EMBED = /^\/v1beta\/(?:models\/)?(.+):(embedContent|batchEmbedContents)$/;

/** One `EmbedContentRequest` of the API: a content to embed and how. */
interface EmbedContentBody {
  content?: GeminiContent;
  taskType?: string;
  outputDimensionality?: number;
}

/**
 * The embedding calls of an `:embedContent` body (one content) or a `:batchEmbedContents` one (a
 * request per content, each naming its model), one EmbedCall per request; undefined when malformed.
 */
function embedCalls(model: string, batch: boolean, raw: string): EmbedCall | undefined {
  const body = parseJsonObject(raw);
  const requests = batch ? body?.requests : body ? [body] : undefined;
  if (!Array.isArray(requests) || requests.length === 0) return undefined;
  const items = requests as EmbedContentBody[];
  if (!items.every((r) => Array.isArray(r?.content?.parts))) return undefined;
  const first = items[0];
  return {
    model,
    inputs: items.map((r) => partsText(r.content)),
    ...(first?.outputDimensionality !== undefined ? { dimensions: first.outputDimensionality } : {}),
    ...(first?.taskType !== undefined ? { task_type: first.taskType } : {}),
  };
}
const CHUNK_GAP_MS = 3;

const partsText = (content: GeminiContent | undefined) =>
  (content?.parts ?? []).map((p) => (typeof p.text === "string" && !p.thought ? p.text : "")).join("");

/** A content's text without Spar's per-turn context, a text part at the head of a user content. */
const userText = (content: GeminiContent | undefined) =>
  partsText(
    content && { ...content, parts: (content.parts ?? []).filter((p, i) => i > 0 || !isSparContext(p.text)) },
  );

const contextText = (body: GenerateContentRequestBody) =>
  body.contents
    .flatMap((c) =>
      c.role === "user" && isSparContext(c.parts?.[0]?.text) ? [c.parts?.[0]?.text ?? ""] : [],
    )
    .join("\n");

const toolResults = (content: GeminiContent) =>
  (content.parts ?? []).flatMap((p) =>
    p.functionResponse ? [JSON.stringify(p.functionResponse.response)] : [],
  );

function defaultReply(body: GenerateContentRequestBody): ScriptedReply {
  const last = body.contents.at(-1);
  const results = last ? toolResults(last) : [];
  const lastResult = results.at(-1);
  if (lastResult !== undefined) return scriptDefault("tool", lastResult);
  return scriptDefault("user", userText(lastUserText(body)));
}

/** The last user content that carries text (a content of function responses is not what the user said). */
function lastUserText(body: GenerateContentRequestBody): GeminiContent | undefined {
  return body.contents.findLast(
    (c) => c.role === "user" && (c.parts ?? []).some((p) => p.text !== undefined),
  );
}

function parseBody(raw: string): GenerateContentRequestBody | undefined {
  const parsed = parseJsonObject(raw);
  return parsed && Array.isArray(parsed.contents)
    ? (parsed as unknown as GenerateContentRequestBody)
    : undefined;
}

function normalize(model: string, stream: boolean, body: GenerateContentRequestBody): ReceivedCall {
  return {
    model,
    system: partsText(body.systemInstruction),
    tools: (body.tools ?? []).flatMap((t) => (t.functionDeclarations ?? []).map((d) => d.name)),
    last_user_text: userText(lastUserText(body)),
    context: contextText(body),
    transcript: [body.systemInstruction, ...body.contents]
      .flatMap((c) =>
        (c?.parts ?? []).map((p) =>
          p.functionResponse ? JSON.stringify(p.functionResponse.response) : p.thought ? "" : (p.text ?? ""),
        ),
      )
      .filter(Boolean),
    tool_results: body.contents.flatMap(toolResults),
    stream,
  };
}

function sendError(res: ServerResponse, status: number, message: string, headers: Record<string, string>) {
  const name = STATUS_NAMES[status] ?? (status >= 500 ? "INTERNAL" : "FAILED_PRECONDITION");
  // The real API tells a client how long to wait in the body (google.rpc.RetryInfo), not in a header:
  // a scripted numeric retry-after goes out both ways.
  const seconds = Number(headers["retry-after"]);
  const details = Number.isFinite(seconds)
    ? [{ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: `${seconds}s` }]
    : undefined;
  sendJson(res, status, { error: { code: status, message, status: name, details } }, headers);
}

/** A string scripts invalid arguments: parsed when it is a JSON object, else sent as-is (off-protocol). */
function argsOf(args: Record<string, unknown> | string): unknown {
  if (typeof args !== "string") return args;
  return parseJsonObject(args) ?? args;
}

export async function startFakeGemini(
  options: { port?: number; embed?: Embedder } = {},
): Promise<FakeGemini> {
  const embeddings = createFakeEmbeddings(options.embed);
  const queue: ScriptedReply[] = [];
  const requests: RecordedRequest[] = [];
  const received: ReceivedCall[] = [];
  let cache = createPrefixCache();

  const http = await startFakeHttp(async (req, res, raw, signal) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const method = req.method ?? "GET";
    if (method === "GET" && url.pathname === "/v1beta/models") return sendJson(res, 200, MODELS);
    const embedRoute = method === "POST" ? EMBED.exec(url.pathname) : null;
    if (embedRoute) {
      const batch = embedRoute[2] === "batchEmbedContents";
      const call = embedCalls(embedRoute[1] ?? "", batch, raw);
      if (!call) return sendError(res, 400, "Invalid JSON payload received.", {});
      const { failure, vectors } = await embeddings.answer(call, req.headers, signal);
      if (failure && "status" in failure) {
        const wait = failure.retry_after_s;
        const headers: Record<string, string> = wait === undefined ? {} : { "retry-after": String(wait) };
        return sendError(res, failure.status, failure.message ?? "scripted failure", headers);
      }
      if (failure) return;
      const embedded = vectors.map((values) => ({ values }));
      return sendJson(res, 200, batch ? { embeddings: embedded } : { embedding: embedded[0] });
    }
    const route = GENERATE.exec(url.pathname);
    if (method !== "POST" || !route) {
      return sendError(res, 404, `Unknown request URL: ${method} ${url.pathname}`, {});
    }
    const model = route[1] ?? "";
    const stream = route[2] === "streamGenerateContent";
    const body = parseBody(raw);
    requests.push({ method, path: url.pathname + url.search, headers: { ...req.headers }, body });
    if (!body) return sendError(res, 400, "Invalid JSON payload received.", {});
    received.push(normalize(model, stream, body));

    const reply = queue.shift() ?? defaultReply(body);
    const headers = { ...reply.headers };
    if (reply.delay_ms) await sleep(reply.delay_ms, undefined, { signal });
    if (reply.status !== undefined && reply.status >= 400) {
      return sendError(res, reply.status, reply.error_message ?? "scripted failure", headers);
    }
    if (reply.malformed) return sendMalformed(res, stream);

    const text = reply.text ?? "";
    // Like Gemini 3: no call ids, and only the first of parallel calls carries a thought signature.
    const calls = (reply.tool_calls ?? []).map((c, index) => ({
      functionCall: { name: c.name, args: argsOf(c.arguments) },
      ...(index === 0 ? { thoughtSignature: randomBytes(24).toString("base64") } : {}),
    }));
    const promptText = [body.systemInstruction, ...body.contents].map(partsText).join("");
    // Unscripted, the prefix it shares with an earlier request (tools included) is cached (implicit caching).
    const cached = cache(promptText, JSON.stringify(body.tools ?? []));
    const tokens = reply.usage ?? {
      prompt_tokens: estimateTokens(promptText),
      completion_tokens: estimateTokens(text),
      ...(cached > 0 ? { cached_tokens: cached } : {}),
    };
    const usageMetadata = {
      promptTokenCount: tokens.prompt_tokens,
      candidatesTokenCount: tokens.completion_tokens,
      totalTokenCount: tokens.prompt_tokens + tokens.completion_tokens,
      // As the real API reports: promptTokenCount counts the cached ones, named only when there are some.
      ...(tokens.cached_tokens ? { cachedContentTokenCount: tokens.cached_tokens } : {}),
    };
    const modelVersion = reply.model ?? model;
    const responseId = randomBytes(8).toString("base64url");
    const chunk = (parts: unknown[], finish?: string) => ({
      candidates: [
        { content: { role: "model", parts }, index: 0, ...(finish ? { finishReason: finish } : {}) },
      ],
      ...(finish
        ? { usageMetadata }
        : {
            usageMetadata: { promptTokenCount: tokens.prompt_tokens, totalTokenCount: tokens.prompt_tokens },
          }),
      modelVersion,
      responseId,
    });

    if (!stream) {
      const parts = [...(text ? [{ text }] : []), ...calls];
      return sendJson(res, 200, chunk(parts, "STOP"), headers);
    }

    // Text in pieces, the function calls whole in one chunk (Gemini never splits a call's arguments),
    // then the finish with the usage; the real API often closes on an empty text part.
    const events = text ? splitForStreaming(text).map((piece) => chunk([{ text: piece }])) : [];
    if (calls.length > 0) events.push(chunk(calls));
    const finishAt = events.length;
    events.push(chunk([{ text: "" }], "STOP"));

    res.writeHead(200, { "content-type": "text/event-stream", ...headers });
    res.flushHeaders();
    // Cut half way through the content, never reaching the chunk with the finishReason.
    const cut = reply.truncate_stream
      ? Math.min(finishAt, Math.max(1, Math.ceil(finishAt / 2)))
      : events.length;
    for (const event of events.slice(0, cut)) {
      await write(res, `data: ${JSON.stringify(event)}\r\n\r\n`);
      await sleep(CHUNK_GAP_MS, undefined, { signal });
    }
    if (reply.truncate_stream) {
      res.socket?.destroy();
      return;
    }
    res.end();
  }, options);

  return {
    url: `http://127.0.0.1:${http.port}`,
    requests,
    calls: () => [...received],
    enqueue: (...replies) => {
      queue.push(...replies);
    },
    embedCalls: embeddings.embedCalls,
    embedKeys: embeddings.embedKeys,
    failEmbeddings: embeddings.failEmbeddings,
    reset: () => {
      embeddings.reset();
      queue.length = 0;
      requests.length = 0;
      received.length = 0;
      cache = createPrefixCache();
    },
    close: () => http.close(),
  };
}

function sendMalformed(res: ServerResponse, stream: boolean): void {
  if (!stream) {
    res.writeHead(200, { "content-type": "application/json" });
    res.end('{"candidates": [{"content": ');
    return;
  }
  res.writeHead(200, { "content-type": "text/event-stream" });
  res.end('data: {"candidates": [{"content": {"parts": [\r\n\r\n');
}
