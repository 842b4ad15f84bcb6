/**
 * A streamed chat completion (`stream: true`) as OpenAI sends it: `data: <chat.completion.chunk>`
 * lines, first the assistant's role, then the text as the model writes it, then the finish reason,
 * then (with `stream_options.include_usage`) a usage chunk, then `data: [DONE]`. As on the Arena's
 * own event stream (sse.ts), nothing is sent before the first token, so a refusal (an unknown model,
 * a quota) is still an HTTP error an OpenAI client raises as its usual exception; an error after
 * that is one chunk in OpenAI's error envelope, and the stream ends.
 */
import type { OutgoingHttpHeaders } from "node:http";
import type { FastifyReply } from "fastify";
import type { FighterMessageResult } from "../../sdk/index.js";
import { SECURITY_HEADERS } from "./middleware.js";
import { toOpenAiError } from "./openai-errors.js";
import { type CompletionHead, chunkOf, finishReason, streamTail, usageChunkOf } from "./openai-shapes.js";

export interface StreamOptions {
  includeUsage: boolean;
  /** The turn's completion head; known once the turn is recorded, before its first token. */
  head(): CompletionHead;
}

/** Runs the turn (`run`), streaming its text to the client; resolves once the stream has ended. */
export async function streamCompletion(
  reply: FastifyReply,
  options: StreamOptions,
  run: (onDelta: (text: string) => void) => Promise<FighterMessageResult>,
): Promise<void> {
  const { includeUsage } = options;
  const raw = reply.raw;
  let opened = false;
  let streamed = false;
  const send = (data: unknown) => {
    // A client that left cancels the turn; whatever the turn still says goes nowhere.
    if (!raw.destroyed && !raw.writableEnded) raw.write(`data: ${JSON.stringify(data)}\n\n`);
  };
  const open = () => {
    if (opened) return;
    opened = true;
    reply.hijack();
    // Hijacked: fastify's onSend hooks no longer run, so the headers set so far (rate limit, CORS,
    // X-Spar-Bout) and the security headers go out here.
    const earlier = Object.entries(reply.getHeaders()).filter(([, value]) => value !== undefined);
    raw.writeHead(200, {
      ...(Object.fromEntries(earlier) as OutgoingHttpHeaders),
      ...SECURITY_HEADERS,
      "content-type": "text/event-stream; charset=utf-8",
      "x-accel-buffering": "no",
      "x-request-id": reply.request.id,
    });
    send(chunkOf(options.head(), { role: "assistant", content: "" }, null, includeUsage));
  };
  try {
    const result = await run((text) => {
      if (text === "") return;
      open();
      streamed = true;
      send(chunkOf(options.head(), { content: text }, null, includeUsage));
    });
    open();
    const head = options.head();
    const tail = streamTail(streamed, result);
    if (tail) send(chunkOf(head, { content: tail }, null, includeUsage));
    send(chunkOf(head, {}, finishReason(result.stop_reason), includeUsage));
    if (includeUsage) send(usageChunkOf(head, result.usage));
    if (!raw.destroyed) raw.end("data: [DONE]\n\n");
  } catch (err) {
    if (!opened) throw err;
    send(toOpenAiError(err as Error).body);
    if (!raw.destroyed) raw.end();
  }
}
