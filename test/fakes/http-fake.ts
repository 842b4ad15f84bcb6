// The plumbing every fake platform server shares: a node:http server on 127.0.0.1, the body read
// for the handler, an abort signal per request (fired when the client leaves or the fake closes, so
// no handler keeps writing to a dead socket), and a close() that ends every open connection.
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer } from "node:http";
import type { Socket } from "node:net";

export type FakeHandler = (
  req: IncomingMessage,
  res: ServerResponse,
  body: string,
  signal: AbortSignal,
) => Promise<void>;

export interface FakeHttp {
  readonly port: number;
  close(): Promise<void>;
}

export async function startFakeHttp(
  handler: FakeHandler,
  options: { port?: number } = {},
): Promise<FakeHttp> {
  const sockets = new Set<Socket>();
  const inFlight = new Set<AbortController>();
  const server = createServer((req, res) => {
    const controller = new AbortController();
    inFlight.add(controller);
    res.on("close", () => controller.abort());
    readBody(req)
      .then((body) => handler(req, res, body, controller.signal))
      .catch((err: unknown) => {
        if (controller.signal.aborted) return;
        // Mid-stream there is no way to report an error except cutting the connection.
        if (res.headersSent) return void res.destroy();
        sendJson(res, 500, { error: { message: `fake server failure: ${String(err)}` } });
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
  if (address === null || typeof address === "string") throw new Error("fake server has no TCP port");
  return {
    port: address.port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        for (const controller of inFlight) controller.abort();
        server.close((err) => (err ? reject(err) : resolve()));
        for (const socket of sockets) socket.destroy();
      }),
  };
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

/** Resolves once the bytes reach the socket, so a truncation that follows cannot discard them. */
export function write(res: ServerResponse, data: string): Promise<void> {
  return new Promise((resolve, reject) => {
    res.write(data, (err) => (err ? reject(err) : resolve()));
  });
}

/** Parses a JSON object body; undefined for anything else. */
export function parseJsonObject(raw: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(raw);
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
