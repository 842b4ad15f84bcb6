// A scripted stand-in for the Ollama API (/api/chat, /api/tags, /api/version). It speaks the real
// wire protocol, NDJSON streaming included, so the real `ollama` client can be pointed at it by `host`.
import type { ServerResponse } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import {
  createFakeEmbeddings,
  type EmbedCall,
  type Embedder,
  embedTokens,
  type FakeEmbeddings,
} from "./embeddings.js";
import { parseJsonObject, sendJson, startFakeHttp, write } from "./http-fake.js";
import {
  estimateTokens,
  type FakeLlmServer,
  type ReceivedCall,
  type ScriptedReply,
  defaultReply as scriptDefault,
  splitForStreaming,
} from "./scripted.js";

export type { ScriptedReply, ScriptedToolCall } from "./scripted.js";

export interface OllamaToolCall {
  // Real Ollama sends an object; a string only comes from a script testing invalid arguments.
  function: { name: string; arguments: Record<string, unknown> | string };
}

export interface OllamaMessage {
  role: "system" | "user" | "assistant" | "tool";
  content: string;
  tool_calls?: OllamaToolCall[];
  /** On a tool result: the tool it answers (Ollama has no call ids). */
  tool_name?: string;
  images?: string[];
  thinking?: string;
}

export interface OllamaTool {
  type: "function";
  function: { name: string; description?: string; parameters?: Record<string, unknown> };
}

export interface ChatRequestBody {
  model: string;
  messages: OllamaMessage[];
  tools?: OllamaTool[];
  /** Ollama streams unless this is `false`. */
  stream?: boolean;
  options?: Record<string, unknown>;
  format?: unknown;
  keep_alive?: string | number;
  think?: unknown;
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: ChatRequestBody | undefined;
}

export interface FakeOllama extends FakeLlmServer, FakeEmbeddings {
  /** Chat requests; embedding requests are in `embedCalls`. */
  readonly requests: RecordedRequest[];
  /** Chat requests whose client hung up before the reply was complete (an abort, seen server-side). */
  abandoned(): number;
}

const MODEL_NAME = "llama-fake:latest";
const TAGS = {
  models: [
    {
      name: MODEL_NAME,
      model: MODEL_NAME,
      modified_at: "2025-01-01T00:00:00Z",
      size: 1_321_098_329,
      digest: "a80c4f17acd55265feec403c7aef86be0c25983ab279d83f3bcd3abbcb5b8b72",
      details: {
        parent_model: "",
        format: "gguf",
        family: "llama",
        families: ["llama"],
        parameter_size: "1.2B",
        quantization_level: "Q4_K_M",
      },
    },
  ],
};

const LINE_GAP_MS = 3;

function defaultReply(body: ChatRequestBody): ScriptedReply {
  const last = body.messages.at(-1);
  if (last?.role === "tool") return scriptDefault("tool", last.content);
  return scriptDefault("user", body.messages.findLast((m) => m.role === "user")?.content ?? "");
}

function parseBody(raw: string): ChatRequestBody | undefined {
  const parsed = parseJsonObject(raw);
  if (!parsed || typeof parsed.model !== "string") return undefined;
  // Ollama accepts a chat without messages (it only loads the model); keep the type honest.
  const messages = Array.isArray(parsed.messages) ? parsed.messages : [];
  return { ...parsed, messages } as unknown as ChatRequestBody;
}

function normalize(body: ChatRequestBody): ReceivedCall {
  // The system prompt is the first message; a system message after it is Spar's per-turn context
  // (right after it on a bout's first turn, which has no history).
  const split = Math.min(1, body.messages.length);
  const texts = (messages: ChatRequestBody["messages"]) =>
    messages
      .filter((m) => m.role === "system")
      .map((m) => m.content)
      .join("\n");
  return {
    model: body.model,
    system: texts(body.messages.slice(0, split)),
    context: texts(body.messages.slice(split)),
    transcript: body.messages.map((m) => m.content).filter(Boolean),
    tools: (body.tools ?? []).map((t) => t.function.name),
    last_user_text: body.messages.findLast((m) => m.role === "user")?.content ?? "",
    tool_results: body.messages.filter((m) => m.role === "tool").map((m) => m.content),
    stream: body.stream !== false,
  };
}

/** The real server's default message for a model that was never pulled. */
function errorMessage(reply: ScriptedReply, body: ChatRequestBody): string {
  if (reply.error_message !== undefined) return reply.error_message;
  return reply.status === 404 ? `model "${body.model}" not found, try pulling it first` : "scripted failure";
}

/** `POST /api/embed`: the body's inputs, or undefined when it is not one the server would take. */
function embedCall(raw: string): EmbedCall | undefined {
  const body = parseJsonObject(raw);
  const input = typeof body?.input === "string" ? [body.input] : body?.input;
  if (!body || typeof body.model !== "string" || !Array.isArray(input)) return undefined;
  if (!input.every((text): text is string => typeof text === "string")) return undefined;
  const dimensions = typeof body.dimensions === "number" ? body.dimensions : undefined;
  return { model: body.model, inputs: input, dimensions };
}

export async function startFakeOllama(
  options: { port?: number; embed?: Embedder } = {},
): Promise<FakeOllama> {
  const embeddings = createFakeEmbeddings(options.embed);
  const queue: ScriptedReply[] = [];
  const requests: RecordedRequest[] = [];
  let abandoned = 0;

  const http = await startFakeHttp(async (req, res, raw, signal) => {
    const path = new URL(req.url ?? "/", "http://127.0.0.1").pathname.replace(/\/+$/, "");
    if (req.method === "GET" && path === "/api/tags") return sendJson(res, 200, TAGS);
    if (req.method === "GET" && path === "/api/version") return sendJson(res, 200, { version: "0.9.0" });
    if (req.method === "POST" && path === "/api/embed") {
      const call = embedCall(raw);
      if (!call) return sendJson(res, 400, { error: "invalid input type" });
      const { failure, vectors } = await embeddings.answer(call, req.headers, signal);
      if (failure && "status" in failure) {
        const wait = failure.retry_after_s;
        const headers = wait === undefined ? undefined : { "retry-after": String(wait) };
        return sendJson(res, failure.status, { error: failure.message ?? "scripted failure" }, headers);
      }
      if (failure) return;
      return sendJson(res, 200, {
        model: call.model,
        embeddings: vectors,
        total_duration: 5_000_000,
        load_duration: 1_000_000,
        prompt_eval_count: embedTokens(call.inputs),
      });
    }
    if (req.method !== "POST" || path !== "/api/chat") {
      // Ollama's router answers unknown routes in plain text, not its JSON error shape.
      res.writeHead(404, { "content-type": "text/plain" });
      return void res.end("404 page not found");
    }
    const body = parseBody(raw);
    requests.push({ method: req.method, path, headers: { ...req.headers }, body });
    if (!body) return sendJson(res, 400, { error: "invalid request body" });

    let complete = false;
    signal.addEventListener("abort", () => {
      if (!complete) abandoned++;
    });
    const reply = queue.shift() ?? defaultReply(body);
    await answer(res, body, reply, signal);
    complete = true;
  }, options);

  return {
    url: `http://127.0.0.1:${http.port}`,
    requests,
    abandoned: () => abandoned,
    calls: () => requests.flatMap((r) => (r.body ? [normalize(r.body)] : [])),
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
      abandoned = 0;
    },
    close: () => http.close(),
  };
}

async function answer(
  res: ServerResponse,
  body: ChatRequestBody,
  reply: ScriptedReply,
  signal: AbortSignal,
): Promise<void> {
  const stream = body.stream !== false;
  if (reply.delay_ms) await sleep(reply.delay_ms, undefined, { signal });
  if (reply.status !== undefined && reply.status >= 400) {
    return sendJson(res, reply.status, { error: errorMessage(reply, body) }, reply.headers);
  }
  if (reply.malformed) return sendMalformed(res, stream);

  const model = reply.model ?? body.model;
  const text = reply.text ?? "";
  const calls = (reply.tool_calls ?? []).map((c) => ({ function: { name: c.name, arguments: c.arguments } }));
  const line = (message: Record<string, unknown>) => ({
    model,
    created_at: new Date().toISOString(),
    message: { role: "assistant", ...message },
    done: false,
  });
  const promptText = body.messages.map((m) => m.content).join("");
  const final = {
    ...line({ content: "" }),
    done: true,
    done_reason: "stop",
    total_duration: 5_000_000,
    load_duration: 1_000_000,
    prompt_eval_count: reply.usage?.prompt_tokens ?? estimateTokens(promptText),
    prompt_eval_duration: 1_000_000,
    eval_count: reply.usage?.completion_tokens ?? estimateTokens(text),
    eval_duration: 3_000_000,
  };

  if (!stream) {
    const message = { role: "assistant", content: text, ...(calls.length > 0 ? { tool_calls: calls } : {}) };
    return sendJson(res, 200, { ...final, message }, reply.headers);
  }

  const lines: unknown[] = text ? splitForStreaming(text).map((piece) => line({ content: piece })) : [];
  // Ollama sends every tool call of a turn in one line, with empty content.
  if (calls.length > 0) lines.push(line({ content: "", tool_calls: calls }));
  const doneAt = lines.length;
  lines.push(final);

  res.writeHead(200, { "content-type": "application/x-ndjson", ...reply.headers });
  res.flushHeaders();
  // Cut after some of the pieces, never reaching the done line.
  const cut = reply.truncate_stream ? Math.min(doneAt, Math.max(1, Math.ceil(doneAt / 2))) : lines.length;
  for (const item of lines.slice(0, cut)) {
    await write(res, `${JSON.stringify(item)}\n`);
    await sleep(LINE_GAP_MS, undefined, { signal });
  }
  if (reply.truncate_stream) return void res.socket?.destroy();
  res.end();
}

function sendMalformed(res: ServerResponse, stream: boolean): void {
  res.writeHead(200, { "content-type": stream ? "application/x-ndjson" : "application/json; charset=utf-8" });
  res.end(`{"model": "broken", "message": {"role": "assistant", "content": "hal${stream ? "\n" : ""}`);
}
