/**
 * The JSON Schemas of the OpenAI-compatible routes (`/v1/chat/completions`, `/v1/models`). A chat
 * request is OpenAI's body: every field OpenAI documents for Chat Completions is accepted, with its
 * type checked, and a field it does not document is refused, as OpenAI refuses it. Only `model`,
 * `messages`, `stream`, `stream_options` and `user` are read; the rest shape a model's output, and a
 * fighter answers with its own model settings and its own tools, so they are accepted and ignored.
 */

const nullable = (...types: string[]) => ({ type: [...types, "null"] });

/** One message of the client's history; only the last `user` message's text reaches the fighter. */
const message = {
  type: "object",
  additionalProperties: false,
  required: ["role"],
  properties: {
    role: { enum: ["system", "developer", "user", "assistant", "tool", "function"] },
    content: {
      type: ["string", "array", "null"],
      // A part's other fields (image_url, input_audio, file …) depend on its type.
      items: { type: "object", required: ["type"], properties: { type: { type: "string" } } },
    },
    name: { type: "string" },
    tool_calls: { type: "array" },
    tool_call_id: { type: "string" },
    function_call: nullable("object"),
    refusal: nullable("string"),
    // What a client copies back from an assistant message it was sent.
    annotations: { type: "array" },
    audio: nullable("object"),
  },
} as const;

/** The body of `POST /v1/chat/completions`. */
export const chatBody = {
  type: "object",
  additionalProperties: false,
  required: ["messages"],
  properties: {
    model: { type: "string", minLength: 1, maxLength: 200 },
    messages: { type: "array", minItems: 1, items: message },
    stream: nullable("boolean"),
    stream_options: {
      type: ["object", "null"],
      additionalProperties: false,
      properties: { include_usage: { type: "boolean" }, include_obfuscation: { type: "boolean" } },
    },
    // The store keys a user's bout by this string, up to 256 characters; "" means no user.
    user: { type: "string", maxLength: 256 },
    n: nullable("integer"),
    // Accepted and ignored: the fighter's own model settings and tools decide these.
    audio: nullable("object"),
    frequency_penalty: nullable("number"),
    function_call: { type: ["string", "object"] },
    functions: { type: "array" },
    logit_bias: nullable("object"),
    logprobs: nullable("boolean"),
    max_completion_tokens: nullable("integer"),
    max_tokens: nullable("integer"),
    metadata: nullable("object"),
    modalities: nullable("array"),
    moderation: nullable("object"),
    parallel_tool_calls: { type: "boolean" },
    prediction: nullable("object"),
    presence_penalty: nullable("number"),
    prompt_cache_key: nullable("string"),
    prompt_cache_options: { type: "object" },
    prompt_cache_retention: nullable("string"),
    reasoning_effort: nullable("string"),
    response_format: { type: "object" },
    safety_identifier: nullable("string"),
    seed: nullable("integer"),
    service_tier: nullable("string"),
    stop: nullable("string", "array"),
    store: nullable("boolean"),
    temperature: nullable("number"),
    tool_choice: { type: ["string", "object"] },
    tools: { type: "array" },
    top_logprobs: nullable("integer"),
    top_p: nullable("number"),
    verbosity: nullable("string"),
    web_search_options: { type: "object" },
  },
} as const;

/** `X-Spar-Bout`: which of the fighter's bouts the message goes to. */
export const chatHeaders = {
  type: "object",
  properties: {
    "x-spar-bout": {
      type: "string",
      pattern: "^(new|[0-9a-fA-F-]{36})$",
      description: 'a bout id (a UUID) or "new"',
    },
  },
} as const;

/** `GET /v1/models/:model`: a fighter's id or name. */
export const modelParams = {
  type: "object",
  required: ["model"],
  properties: { model: { type: "string", minLength: 1, maxLength: 200 } },
} as const;

/** A content part as the client sent it; only `text` parts are read. */
export interface ContentPart {
  type: string;
  text?: string;
}

/** A history message as the client sent it (the fields this endpoint reads). */
export interface ChatMessageInput {
  role: "system" | "developer" | "user" | "assistant" | "tool" | "function";
  content?: string | ContentPart[] | null;
}

/** The fields of a chat request this endpoint reads. */
export interface ChatRequest {
  model?: string;
  messages: ChatMessageInput[];
  stream?: boolean | null;
  stream_options?: { include_usage?: boolean } | null;
  user?: string;
  n?: number | null;
}

const errorBody = {
  description:
    "An error in OpenAI's envelope: `code` is Spar's error code, `model_not_found` for an unknown fighter",
  type: "object",
  additionalProperties: false,
  required: ["error"],
  properties: {
    error: {
      type: "object",
      additionalProperties: false,
      required: ["message", "type", "param", "code"],
      properties: {
        message: { type: "string" },
        type: { type: "string" },
        param: { type: ["string", "null"] },
        code: { type: "string" },
      },
    },
  },
} as const;

const usage = {
  type: "object",
  additionalProperties: false,
  required: ["prompt_tokens", "completion_tokens", "total_tokens"],
  properties: {
    prompt_tokens: { type: "integer" },
    completion_tokens: { type: "integer" },
    total_tokens: { type: "integer" },
  },
} as const;

const completion = {
  type: "object",
  additionalProperties: false,
  required: ["id", "object", "created", "model", "choices", "usage"],
  properties: {
    id: { type: "string" },
    object: { const: "chat.completion" },
    created: { type: "integer" },
    model: { type: "string" },
    choices: {
      type: "array",
      items: {
        type: "object",
        additionalProperties: false,
        required: ["index", "message", "logprobs", "finish_reason"],
        properties: {
          index: { type: "integer" },
          message: {
            type: "object",
            additionalProperties: false,
            required: ["role", "content", "refusal"],
            properties: {
              role: { const: "assistant" },
              content: { type: "string" },
              refusal: { type: "null" },
            },
          },
          logprobs: { type: "null" },
          finish_reason: { enum: ["stop", "length"] },
        },
      },
    },
    usage,
  },
} as const;

const model = {
  type: "object",
  additionalProperties: false,
  required: ["id", "object", "created", "owned_by"],
  properties: {
    id: { type: "string", description: "the fighter's name" },
    object: { const: "model" },
    created: { type: "integer" },
    owned_by: { const: "spar" },
  },
} as const;

const errors = { "4xx": errorBody, "5xx": errorBody } as const;

/** What `POST /v1/chat/completions` answers: a completion, or an event stream of chunks. */
export const chatResponses = {
  "2xx": {
    description: "The fighter's reply: a `chat.completion`, or with `stream: true` an event stream",
    content: {
      "application/json": { schema: completion },
      "text/event-stream": {
        schema: {
          type: "string",
          description:
            "`data: <chat.completion.chunk>` lines: the role, the text as written, the finish reason, the usage when `stream_options.include_usage`, then `data: [DONE]`",
        },
      },
    },
  },
  ...errors,
} as const;

/** What `GET /v1/models` answers. */
export const modelsResponses = {
  "2xx": {
    type: "object",
    additionalProperties: false,
    required: ["object", "data"],
    properties: { object: { const: "list" }, data: { type: "array", items: model } },
  },
  ...errors,
} as const;

/** What `GET /v1/models/:model` answers. */
export const modelResponses = { "2xx": model, ...errors } as const;
