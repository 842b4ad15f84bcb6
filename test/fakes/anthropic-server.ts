// A scripted stand-in for the Anthropic Messages API. It speaks the real wire protocol (JSON replies,
// named server-sent events, the `{type: "error"}` envelope) so the real `@anthropic-ai/sdk` can be
// pointed at it with only `baseURL` changed. The base URL is the bare origin: the SDK adds `/v1/...`.
import { randomBytes } from "node:crypto";
import type { ServerResponse } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import { parseJsonObject, sendJson, startFakeHttp, write } from "./http-fake.js";
import { type CacheBlock, createBreakpointCache } from "./prompt-cache.js";
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

export interface MessagesContentBlock {
  type: string;
  text?: string;
  id?: string;
  name?: string;
  input?: unknown;
  tool_use_id?: string;
  content?: string | MessagesContentBlock[];
  is_error?: boolean;
  [key: string]: unknown;
}

export interface MessagesMessage {
  role: "user" | "assistant";
  content: string | MessagesContentBlock[];
}

export interface MessagesTool {
  name: string;
  description?: string;
  input_schema?: Record<string, unknown>;
  [key: string]: unknown;
}

export interface MessagesRequestBody {
  model: string;
  max_tokens: number;
  messages: MessagesMessage[];
  system?: string | MessagesContentBlock[];
  tools?: MessagesTool[];
  stream?: boolean;
  temperature?: number;
  [key: string]: unknown;
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: MessagesRequestBody | undefined;
  /** The usage the fake answered with, as the API reports it (cache reads and writes apart). */
  usage?: Record<string, number>;
}

export interface FakeAnthropic extends FakeLlmServer {
  readonly requests: RecordedRequest[];
  setDefault(fn: (body: MessagesRequestBody) => ScriptedReply): void;
}

const MODELS = {
  data: [
    { type: "model", id: "claude-fake", display_name: "Claude Fake", created_at: "2025-01-01T00:00:00Z" },
  ],
  has_more: false,
  first_id: "claude-fake",
  last_id: "claude-fake",
};

const ERROR_TYPES: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  402: "billing_error",
  403: "permission_error",
  404: "not_found_error",
  408: "timeout_error",
  409: "conflict_error",
  413: "request_too_large",
  429: "rate_limit_error",
  529: "overloaded_error",
};

const EVENT_GAP_MS = 3;

/** The text of a string content or of its text blocks; tool_result blocks count by their content. */
function blocksText(content: string | MessagesContentBlock[] | undefined): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((block) => (typeof block.text === "string" ? block.text : "")).join("");
}

/** A message's text without Spar's per-turn context, which heads the turn's user message. */
function userText(content: string | MessagesContentBlock[] | undefined): string {
  return Array.isArray(content)
    ? blocksText(content.filter((b, i) => i > 0 || !isSparContext(b.text)))
    : blocksText(content);
}

/** Spar's per-turn context: a text block of its own at the head of a user message. */
function contextText(messages: MessagesMessage[]): string {
  return messages
    .flatMap((m) =>
      Array.isArray(m.content) && m.role === "user" && isSparContext(m.content[0]?.text)
        ? [m.content[0]?.text ?? ""]
        : [],
    )
    .join("\n");
}

function toolResults(message: MessagesMessage | undefined): string[] {
  if (!message || typeof message.content === "string") return [];
  return message.content.filter((b) => b.type === "tool_result").map((b) => blocksText(b.content));
}

function defaultReply(body: MessagesRequestBody): ScriptedReply {
  const lastUser = body.messages.findLast((m) => m.role === "user");
  const results = toolResults(lastUser);
  const lastResult = results.at(-1);
  if (lastResult !== undefined) return scriptDefault("tool", lastResult);
  return scriptDefault("user", userText(lastUser?.content));
}

function parseBody(raw: string): MessagesRequestBody | undefined {
  const parsed = parseJsonObject(raw);
  return parsed && Array.isArray(parsed.messages) ? (parsed as unknown as MessagesRequestBody) : undefined;
}

function normalize(body: MessagesRequestBody): ReceivedCall {
  return {
    model: body.model,
    system: blocksText(body.system),
    tools: (body.tools ?? []).map((t) => t.name),
    // As the Gemini fake reads it: a message of tool results is not what the user said.
    last_user_text: userText(
      body.messages.findLast(
        (m) =>
          m.role === "user" && (typeof m.content === "string" || m.content.some((b) => b.type === "text")),
      )?.content,
    ),
    context: contextText(body.messages),
    transcript: [
      ...(Array.isArray(body.system) ? body.system.map((b) => b.text ?? "") : [body.system ?? ""]),
      ...body.messages.flatMap((m) =>
        typeof m.content === "string"
          ? [m.content]
          : m.content.map((b) => blocksText(b.content) || (b.text ?? "")),
      ),
    ].filter(Boolean),
    tool_results: body.messages.flatMap(toolResults),
    stream: body.stream === true,
  };
}

function promptText(body: MessagesRequestBody): string {
  const parts = body.messages.flatMap((m) =>
    typeof m.content === "string"
      ? [m.content]
      : m.content.map((b) => blocksText(b.content) || (b.text ?? "")),
  );
  return [blocksText(body.system), ...parts].join("");
}

type BreakpointCache = ReturnType<typeof createBreakpointCache>;

/** The request's blocks in the order the API caches them: tools, system, messages. */
function cacheBlocks(body: MessagesRequestBody): CacheBlock[] {
  const block = (key: unknown, text: string, marked: unknown): CacheBlock => ({
    key,
    text,
    breakpoint: marked !== undefined && marked !== null,
  });
  const unmarked = (b: Record<string, unknown>) => ({ ...b, cache_control: undefined });
  const ofContent = (role: string, content: string | MessagesContentBlock[]) =>
    typeof content === "string"
      ? // The API reads a string as one text block, and caches it as one.
        [block({ role, type: "text", text: content }, content, undefined)]
      : content.map((b) =>
          block(
            { role, ...unmarked(b) },
            blocksText(b.content) || (b.text ?? JSON.stringify(b.input ?? "")),
            b.cache_control,
          ),
        );
  return [
    ...(body.tools ?? []).map((t) => block(unmarked(t), JSON.stringify(unmarked(t)), t.cache_control)),
    ...(body.system === undefined ? [] : ofContent("system", body.system)),
    ...body.messages.flatMap((m) => ofContent(m.role, m.content)),
  ];
}

function sendError(res: ServerResponse, status: number, message: string, headers?: Record<string, string>) {
  const type = ERROR_TYPES[status] ?? (status >= 500 ? "api_error" : "invalid_request_error");
  sendJson(res, status, { type: "error", error: { type, message }, request_id: newId("req_") }, headers);
}

const newId = (prefix: string) => `${prefix}${randomBytes(12).toString("hex")}`;

interface ToolUse {
  id: string;
  name: string;
  /** Parsed input, or the scripted string verbatim (which may be invalid JSON). */
  input: unknown;
  json: string;
}

export async function startFakeAnthropic(options: { port?: number } = {}): Promise<FakeAnthropic> {
  const queue: ScriptedReply[] = [];
  const requests: RecordedRequest[] = [];
  let makeDefault = defaultReply;
  let cache = createBreakpointCache();

  const http = await startFakeHttp(async (req, res, raw, signal) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const path = url.pathname.replace(/\/+$/, "");
    if (req.method === "GET" && path === "/v1/models") return sendJson(res, 200, MODELS);
    if (req.method !== "POST" || path !== "/v1/messages") {
      return sendError(res, 404, `Not found: ${req.method} ${url.pathname}`);
    }
    const body = parseBody(raw);
    const recorded: RecordedRequest = {
      method: req.method,
      path: url.pathname,
      headers: { ...req.headers },
      body,
    };
    requests.push(recorded);
    if (!body) return sendError(res, 400, "The request body is not a valid Messages request.");
    // The real API requires max_tokens; a driver that forgets it must fail here too.
    if (typeof body.max_tokens !== "number") return sendError(res, 400, "max_tokens: Field required");

    const reply = queue.shift() ?? makeDefault(body);
    const headers = { "request-id": newId("req_"), ...reply.headers };
    if (reply.delay_ms) await sleep(reply.delay_ms, undefined, { signal });
    if (reply.status !== undefined && reply.status >= 400) {
      return sendError(res, reply.status, reply.error_message ?? "scripted failure", headers);
    }
    if (reply.malformed) return sendMalformed(res, body.stream === true);

    const { message, text, uses } = buildMessage(body, reply, cache);
    recorded.usage = message.usage;
    if (body.stream !== true) return sendJson(res, 200, message, headers);

    const events = streamEvents(message, text, uses);
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", ...headers });
    res.flushHeaders();
    // Cut past the first deltas but before message_delta, so neither stop_reason nor message_stop arrives.
    const stopAt = events.findIndex((e) => e.type === "message_delta");
    const cut = reply.truncate_stream
      ? Math.min(stopAt, Math.max(4, Math.ceil(events.length / 2)))
      : undefined;
    for (const event of events.slice(0, cut)) {
      await write(res, `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
      await sleep(EVENT_GAP_MS, undefined, { signal });
    }
    if (reply.truncate_stream) return void res.socket?.destroy();
    res.end();
  }, options);

  return {
    url: `http://127.0.0.1:${http.port}`,
    requests,
    calls: () => requests.flatMap((r) => (r.body ? [normalize(r.body)] : [])),
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
      cache = createBreakpointCache();
    },
    close: () => http.close(),
  };
}

/** The reply as the non-streamed API returns it, plus the pieces the event stream is cut from. */
function buildMessage(body: MessagesRequestBody, reply: ScriptedReply, cache: BreakpointCache) {
  const text = reply.text ?? "";
  const uses: ToolUse[] = (reply.tool_calls ?? []).map((call) => ({
    id: newId("toolu_"),
    name: call.name,
    input: call.arguments,
    json: typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments),
  }));
  // As the real API counts: input_tokens leaves out the tokens read from and written to the cache.
  // Unscripted, a request with breakpoints is counted against the fake's cache.
  const counted = reply.usage ? undefined : cache(cacheBlocks(body));
  const cached = reply.usage?.cached_tokens ?? counted?.read ?? 0;
  const written = reply.usage?.cache_write_tokens ?? counted?.written ?? 0;
  const usage = {
    input_tokens:
      (reply.usage?.prompt_tokens ?? counted?.total ?? estimateTokens(promptText(body))) - cached - written,
    cache_creation_input_tokens: written,
    cache_read_input_tokens: cached,
    output_tokens: reply.usage?.completion_tokens ?? estimateTokens(text + uses.map((u) => u.json).join("")),
  };
  const message = {
    id: newId("msg_"),
    type: "message",
    role: "assistant",
    model: reply.model ?? body.model,
    content: [
      ...(text !== "" || uses.length === 0 ? [{ type: "text", text }] : []),
      ...uses.map((u) => ({ type: "tool_use", id: u.id, name: u.name, input: u.input })),
    ],
    stop_reason: uses.length > 0 ? "tool_use" : "end_turn",
    stop_sequence: null,
    usage,
  };
  return { message, text, uses };
}

type StreamEvent = { type: string } & Record<string, unknown>;

/** The event sequence the real API sends for one message, ping included (the SDK must skip it). */
function streamEvents(
  message: {
    stop_reason: string;
    usage: { input_tokens: number; output_tokens: number } & Record<string, number>;
  },
  text: string,
  uses: ToolUse[],
): StreamEvent[] {
  const start = { ...message, content: [], stop_reason: null, usage: { ...message.usage, output_tokens: 1 } };
  const events: StreamEvent[] = [{ type: "message_start", message: start }, { type: "ping" }];
  let index = 0;
  if (text !== "" || uses.length === 0) {
    events.push({ type: "content_block_start", index, content_block: { type: "text", text: "" } });
    for (const piece of splitForStreaming(text)) {
      events.push({ type: "content_block_delta", index, delta: { type: "text_delta", text: piece } });
    }
    events.push({ type: "content_block_stop", index: index++ });
  }
  for (const use of uses) {
    const block = { type: "tool_use", id: use.id, name: use.name, input: {} };
    events.push({ type: "content_block_start", index, content_block: block });
    for (const piece of halves(use.json)) {
      events.push({
        type: "content_block_delta",
        index,
        delta: { type: "input_json_delta", partial_json: piece },
      });
    }
    events.push({ type: "content_block_stop", index: index++ });
  }
  events.push(
    {
      type: "message_delta",
      delta: { stop_reason: message.stop_reason, stop_sequence: null },
      usage: { output_tokens: message.usage.output_tokens },
    },
    { type: "message_stop" },
  );
  return events;
}

/** Tool input JSON goes out in two pieces at least, as the real API splits it. */
function halves(s: string): string[] {
  const mid = Math.ceil(s.length / 2);
  return [s.slice(0, mid), s.slice(mid)].filter((p) => p !== "");
}

function sendMalformed(res: ServerResponse, stream: boolean): void {
  if (!stream) {
    res.writeHead(200, { "content-type": "application/json" });
    res.end('{"id": "msg_broken", "type": "message", "content": [');
    return;
  }
  res.writeHead(200, { "content-type": "text/event-stream" });
  res.end('event: message_start\ndata: {"type": "message_start", "message": {"id": \n\n');
}
