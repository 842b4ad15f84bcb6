/**
 * The Gemini wire format: Spar's request and messages out as contents and config, text, function calls,
 * usage and finish reason back. Pure functions, shared by the streamed and the non-streamed path.
 */
import { randomUUID } from "node:crypto";
import type {
  Content,
  FunctionDeclaration,
  GenerateContentConfig,
  GenerateContentResponseUsageMetadata,
  Part,
} from "@google/genai";
import type {
  ChatMessage,
  LlmRequest,
  LlmResponse,
  PlacedContext,
  StopReason,
  ToolCall,
  ToolDefinition,
} from "../../sdk/index.js";
import { placeContext } from "../../sdk/index.js";

/**
 * Gemini 3 rejects (400) a function call replayed without the thought signature it came with. A call
 * whose signature is unknown (history from before a restart, or from another model) carries this value
 * instead, which the Gemini API documents for exactly that case; it costs the model its earlier reasoning.
 */
export const UNKNOWN_SIGNATURE = "skip_thought_signature_validator";

/** The thought signature a function call came with, if the driver still has it. */
export type SignatureOf = (callId: string) => string | undefined;

type ToolMessage = Extract<ChatMessage, { role: "tool" }>;

/** The generation settings and tools of a request; the driver adds the abort signal and SDK switches. */
export function requestConfig(request: LlmRequest): GenerateContentConfig {
  const { max_tokens, temperature } = request.model;
  const { system } = placeContext(request);
  return {
    ...(system ? { systemInstruction: { parts: [{ text: system }] } } : {}),
    ...(request.tools.length > 0
      ? { tools: [{ functionDeclarations: request.tools.map(toDeclaration) }] }
      : {}),
    ...(max_tokens !== undefined ? { maxOutputTokens: max_tokens } : {}),
    ...(temperature !== undefined ? { temperature } : {}),
  };
}

/**
 * The conversation as contents: the assistant is the "model" role, and the results of one model turn
 * go back together in one user content of functionResponse parts, in call order. The turn's
 * context is a text part of its own at the head of the turn's first user content, after the
 * history, so the history stays a prefix the implicit cache can match.
 */
export function toContents(
  messages: ChatMessage[],
  signatureOf: SignatureOf,
  context: Pick<PlacedContext, "at" | "text"> = { at: -1, text: "" },
): Content[] {
  const contents: Content[] = [];
  let results: Part[] | undefined;
  for (const [index, message] of messages.entries()) {
    if (message.role === "tool") {
      const part: Part = {
        functionResponse: { id: message.tool_call_id, name: message.name, response: toolResponse(message) },
      };
      if (results) results.push(part);
      else {
        results = [part];
        contents.push({ role: "user", parts: results });
      }
      continue;
    }
    results = undefined;
    if (message.role === "user") {
      const head: Part[] = index === context.at ? [{ text: context.text }] : [];
      contents.push({ role: "user", parts: [...head, { text: message.content }] });
      continue;
    }
    const parts = modelParts(message, signatureOf);
    // The API refuses a content without parts; an empty assistant turn carries nothing worth keeping.
    if (parts.length > 0) contents.push({ role: "model", parts });
  }
  return contents;
}

function modelParts(message: Extract<ChatMessage, { role: "assistant" }>, signatureOf: SignatureOf): Part[] {
  const parts: Part[] = message.content ? [{ text: message.content }] : [];
  for (const [index, call] of (message.tool_calls ?? []).entries()) {
    // Of parallel calls only the first is signed, so only the first needs the stand-in.
    const signature = signatureOf(call.id) ?? (index === 0 ? UNKNOWN_SIGNATURE : undefined);
    parts.push({
      functionCall: { id: call.id, name: call.name, args: call.arguments },
      ...(signature ? { thoughtSignature: signature } : {}),
    });
  }
  return parts;
}

/**
 * A functionResponse's `response` must be an object: a result that is a JSON object goes as it is,
 * any other text as `{result}`, an error as `{error}` (the key the API reads as a failure).
 */
export function toolResponse(message: ToolMessage): Record<string, unknown> {
  if (message.is_error) return { error: message.content };
  return parseObject(message.content) ?? { result: message.content };
}

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(text);
    return isPlainObject(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

// JSON Schema as written, in the field that takes it: `parameters` is the OpenAPI subset and refuses
// keywords such as additionalProperties.
function toDeclaration(tool: ToolDefinition): FunctionDeclaration {
  return { name: tool.name, description: tool.description, parametersJsonSchema: tool.input_schema };
}

/** A function call read back, with the thought signature to replay it with. */
export interface SignedCall {
  call: ToolCall;
  signature?: string;
}

/** One candidate's parts: the visible text pieces (thoughts skipped) and the function calls, whole. */
export function readParts(parts: Part[] | undefined): { text: string[]; calls: SignedCall[] } {
  const text: string[] = [];
  const calls: SignedCall[] = [];
  for (const part of parts ?? []) {
    if (part.functionCall) {
      const signature = part.thoughtSignature;
      calls.push({ call: toToolCall(part.functionCall), ...(signature ? { signature } : {}) });
    } else if (part.text && part.thought !== true) {
      text.push(part.text);
    }
  }
  return { text, calls };
}

// Gemini sends arguments as an object; ids only on some models, and the agent loop needs one to pair
// the result with its call.
function toToolCall(functionCall: NonNullable<Part["functionCall"]>): ToolCall {
  const id = functionCall.id || `call_${randomUUID()}`;
  const name = functionCall.name ?? "";
  const args: unknown = functionCall.args;
  if (args === undefined || args === null) return { id, name, arguments: {} };
  if (isPlainObject(args)) return { id, name, arguments: args };
  return { id, name, arguments: {}, raw_arguments: JSON.stringify(args) };
}

// Thinking tokens are billed as output, and candidatesTokenCount leaves them out.
export function usageOf(usage: GenerateContentResponseUsageMetadata | undefined): LlmResponse["usage"] {
  // promptTokenCount counts the cached ones too (cachedContentTokenCount), as Usage does.
  const cached = usage?.cachedContentTokenCount ?? 0;
  return {
    input_tokens: usage?.promptTokenCount ?? 0,
    output_tokens: (usage?.candidatesTokenCount ?? 0) + (usage?.thoughtsTokenCount ?? 0),
    ...(cached > 0 ? { cached_tokens: cached } : {}),
  };
}

/** Gemini says STOP whether or not it called functions; the calls decide between end and tool_use. */
export function stopReason(finish: string | undefined, calledTools: boolean): StopReason {
  if (finish === "STOP") return calledTools ? "tool_use" : "end";
  if (finish === "MAX_TOKENS") return "max_tokens";
  return "other";
}
