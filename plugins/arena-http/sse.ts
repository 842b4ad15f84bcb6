import type { FastifyReply } from "fastify";
import type { ApprovalNotice, FighterMessageResult } from "../../sdk/index.js";
import { envelope, toSparError } from "./errors.js";
import { SECURITY_HEADERS } from "./middleware.js";

/**
 * A message answered as server-sent events (`Accept: text/event-stream`): `delta` events carry text
 * as the model produces it, an `approval` event (`{id, move, subject, expires_at}`) each time a call
 * of the turn waits for an operator's answer, then one `reply` (the usual response body) or `error`
 * event. Until the first delta or approval nothing is sent, so a refusal (404, 429 …) is still an
 * ordinary HTTP error.
 */
export async function streamReply(
  reply: FastifyReply,
  run: (
    onDelta: (text: string) => void,
    onApproval: (approval: ApprovalNotice) => void,
  ) => Promise<FighterMessageResult>,
): Promise<void> {
  let started = false;
  const start = () => {
    if (started) return;
    started = true;
    reply.hijack();
    // Hijacked: fastify's onSend hooks no longer run, so the security headers go here.
    reply.raw.writeHead(200, {
      ...SECURITY_HEADERS,
      "content-type": "text/event-stream; charset=utf-8",
      "x-accel-buffering": "no",
      "x-request-id": reply.request.id,
    });
  };
  const event = (name: string, data: unknown) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
  try {
    const result = await run(
      (text) => {
        start();
        reply.raw.write(event("delta", { text }));
      },
      (approval) => {
        start();
        reply.raw.write(event("approval", approval));
      },
    );
    start();
    reply.raw.end(event("reply", result));
  } catch (err) {
    if (!started) throw err;
    reply.raw.end(event("error", envelope(toSparError(err as Error))));
  }
}
