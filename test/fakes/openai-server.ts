// A scripted stand-in for the OpenAI chat-completions API. It speaks the real wire protocol so the
// real `openai` SDK can be pointed at it with only `baseURL` changed.
import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer } from "node:http";
import type { Socket } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";

export interface ScriptedToolCall {
  name: string;
  // A string is sent verbatim, so tests can script invalid JSON arguments.
  arguments: Record<string, unknown> | string;
}

export interface ScriptedReply {
  text?: string;
  tool_calls?: ScriptedToolCall[];
  usage?: { prompt_tokens: number; completion_tokens: number };
  status?: number;
  error_message?: string;
  headers?: Record<string, string>;
  delay_ms?: number;
  truncate_stream?: boolean;
  model?: string;
}

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
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: ChatCompletionRequestBody | undefined;
}

export interface FakeOpenAI {
  readonly url: string;
  readonly requests: RecordedRequest[];
  enqueue(...replies: ScriptedReply[]): void;
  setDefault(fn: (body: ChatCompletionRequestBody) => ScriptedReply): void;
  reset(): void;
  close(): Promise<void>;
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
  if (last?.role === "tool") return { text: `done: ${contentText(last.content)}` };
  const user = body.messages.findLast((m) => m.role === "user");
  return { text: `echo: ${contentText(user?.content)}` };
}

function parseBody(raw: string): ChatCompletionRequestBody | undefined {
  try {
    const parsed: unknown = JSON.parse(raw);
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return undefined;
    if (!("messages" in parsed) || !Array.isArray(parsed.messages)) return undefined;
    return parsed as ChatCompletionRequestBody;
  } catch {
    return undefined;
  }
}

// Splits into at least `min` pieces (when the string is long enough) so streaming is observable.
function splitPieces(s: string, min: number): string[] {
  const words = s.match(/\S+\s*|\s+/g) ?? [];
  if (words.length >= min || s.length < min) return words.length > 0 ? words : [s];
  const size = Math.ceil(s.length / min);
  const pieces: string[] = [];
  for (let i = 0; i < s.length; i += size) pieces.push(s.slice(i, i + size));
  return pieces;
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

function sendError(res: ServerResponse, status: number, message: string, headers?: Record<string, string>) {
  const [type, code] = ERROR_TYPES[status] ?? (status >= 500 ? ["server_error", null] : ["api_error", null]);
  sendJson(res, status, { error: { message, type, param: null, code } }, headers);
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

// Resolves once the bytes reach the socket, so a truncation that follows cannot discard them.
function write(res: ServerResponse, data: string): Promise<void> {
  return new Promise((resolve, reject) => {
    res.write(data, (err) => (err ? reject(err) : resolve()));
  });
}

const newId = (prefix: string) => `${prefix}${randomBytes(12).toString("hex")}`;

export async function startFakeOpenAI(options: { port?: number } = {}): Promise<FakeOpenAI> {
  const queue: ScriptedReply[] = [];
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  // Aborting these wakes any handler sleeping in delay_ms or between chunks, so close() is prompt.
  const inFlight = new Set<AbortController>();
  let makeDefault = defaultReply;
  let requestCount = 0;

  async function answer(req: IncomingMessage, res: ServerResponse, signal: AbortSignal): Promise<void> {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const path = url.pathname.replace(/\/+$/, "");
    const raw = await readBody(req);
    if (req.method === "GET" && path === "/v1/models") return sendJson(res, 200, MODELS);
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
    const promptChars = body.messages.reduce((n, m) => n + contentText(m.content).length, 0);
    const tokens = reply.usage ?? {
      prompt_tokens: Math.ceil(promptChars / 4),
      completion_tokens: Math.max(1, Math.ceil(text.length / 4)),
    };
    const usage = { ...tokens, total_tokens: tokens.prompt_tokens + tokens.completion_tokens };

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
    if (text) for (const piece of splitPieces(text, 3)) events.push(chunk({ content: piece }));
    for (const [index, { id: callId, function: fn }] of calls.entries()) {
      const opening = { index, id: callId, type: "function", function: { name: fn.name, arguments: "" } };
      events.push(chunk({ tool_calls: [opening] }));
      for (const piece of splitPieces(fn.arguments, 2).filter((p) => p !== "")) {
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
  }

  const server = createServer((req, res) => {
    const controller = new AbortController();
    inFlight.add(controller);
    // A client that gave up (e.g. an SDK timeout) must not leave a handler writing to a dead socket.
    res.on("close", () => controller.abort());
    answer(req, res, controller.signal)
      .catch((err: unknown) => {
        if (controller.signal.aborted) return;
        // Mid-stream there is no way to report an error except cutting the connection.
        if (res.headersSent) return void res.destroy();
        sendError(res, 500, `fake server failure: ${String(err)}`);
      })
      .finally(() => inFlight.delete(controller));
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("fake OpenAI server has no TCP port");

  return {
    url: `http://127.0.0.1:${address.port}/v1`,
    requests,
    enqueue: (...replies) => {
      queue.push(...replies);
    },
    setDefault: (fn) => {
      makeDefault = fn;
    },
    reset: () => {
      queue.length = 0;
      requests.length = 0;
      makeDefault = defaultReply;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        for (const controller of inFlight) controller.abort();
        server.close((err) => (err ? reject(err) : resolve()));
        for (const socket of sockets) socket.destroy();
      }),
  };
}
