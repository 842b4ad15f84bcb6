/**
 * Server-sent events as the daemon writes them (plugins/arena-http/sse.ts): blocks of `event: <name>`
 * and one `data: <json>` line, separated by a blank line. Shared by `spar/client` and the CLI.
 */

/** One server-sent event: its name and parsed data. */
export interface StreamEvent {
  event: string;
  data: unknown;
}

/**
 * The events of a response body as they arrive. `onChunkError` may turn a failed read (the daemon
 * gone mid-stream) into the caller's own error; it must throw. Stopping early closes the body.
 *
 * @example
 * for await (const { event, data } of readEvents(response.body)) console.log(event, data);
 */
export async function* readEvents(
  body: AsyncIterable<Uint8Array>,
  onChunkError: (err: unknown) => never = (err) => {
    throw err;
  },
): AsyncGenerator<StreamEvent> {
  const decoder = new TextDecoder();
  let buffer = "";
  const chunks = body[Symbol.asyncIterator]();
  try {
    for (;;) {
      const next = await chunks.next().catch(onChunkError);
      if (next.done) return;
      buffer += decoder.decode(next.value, { stream: true });
      let end = buffer.indexOf("\n\n");
      while (end >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const event = /^event: (.*)$/m.exec(block)?.[1] ?? "message";
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (data !== undefined) yield { event, data: JSON.parse(data) as unknown };
        end = buffer.indexOf("\n\n");
      }
    }
  } finally {
    // A caller that stops at the reply leaves the rest unread: close the body, as for await would.
    await chunks.return?.().catch(() => undefined);
  }
}
